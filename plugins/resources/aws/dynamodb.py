"""``AWS::DynamoDB::Table``; the physical id is the table's name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.errors import BackendFailed
from engine.schema import INTEGER, LIST, MAP, STRING, AllowedValues, Attribute, Property
from plugins.resources.aws.common import TAGS, AwsResource, drop_none

THROUGHPUT = {
    "ReadCapacityUnits": Property(INTEGER, "Reads per second.", required=True),
    "WriteCapacityUnits": Property(INTEGER, "Writes per second.", required=True),
}


class Table(AwsResource):
    """A DynamoDB table. The billing mode, throughput and tags change in place; the
    name, keys and attribute definitions replace it. Creating and deleting are
    asynchronous: the worker polls the table's status."""

    service: ClassVar[str] = "dynamodb"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "TableName": Property(STRING, "The table's name; a stable name of Kiln's when "
                              "unset."),
        "AttributeDefinitions": Property(LIST, "The key attributes' names and types.",
                                         required=True, schema=Property(MAP, schema={
                                             "AttributeName": Property(STRING, required=True),
                                             "AttributeType": Property(
                                                 STRING, required=True,
                                                 constraints=(AllowedValues(("S", "N", "B")),)),
                                         })),
        "KeySchema": Property(LIST, "The primary key.", required=True,
                              schema=Property(MAP, schema={
                                  "AttributeName": Property(STRING, required=True),
                                  "KeyType": Property(STRING, required=True, constraints=(
                                      AllowedValues(("HASH", "RANGE")),)),
                              })),
        "BillingMode": Property(STRING, "PROVISIONED or PAY_PER_REQUEST.",
                                default="PROVISIONED", update_allowed=True,
                                constraints=(AllowedValues(("PROVISIONED",
                                                            "PAY_PER_REQUEST")),)),
        "ProvisionedThroughput": Property(MAP, "Capacity, for PROVISIONED billing.",
                                          update_allowed=True, schema=THROUGHPUT),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "Arn": Attribute("The table's ARN.", "string"),
        "StreamArn": Attribute("The table's stream ARN (null without a stream).", "string"),
    }

    def _name(self) -> str:
        return str(self.properties.get("TableName") or self.stable_name(255, r"A-Za-z0-9_.-"))

    def find(self) -> str | None:
        name = self._name()
        found = self.present(lambda: self.client().describe_table(TableName=name))
        if found is None:
            return None
        self._remember(found["Table"])
        return name

    def create(self) -> str:
        name = self._name()
        table = self.client().create_table(**drop_none({
            "TableName": name,
            "AttributeDefinitions": self.properties["AttributeDefinitions"],
            "KeySchema": self.properties["KeySchema"],
            "BillingMode": self.properties["BillingMode"],
            "ProvisionedThroughput": self.properties.get("ProvisionedThroughput"),
            "Tags": self.all_tags()}))["TableDescription"]
        self._remember(table)
        return name

    def _remember(self, table: Mapping[str, Any]) -> None:
        self.data.update(drop_none({"arn": table.get("TableArn"),
                                    "stream_arn": table.get("LatestStreamArn")}))

    def _status(self) -> str:
        table = self.client().describe_table(TableName=self.physical_id)["Table"]
        return str(table.get("TableStatus"))

    def created(self) -> bool:
        status = self._status()
        if status not in ("CREATING", "ACTIVE", "UPDATING"):
            raise BackendFailed(service="dynamodb", operation="DescribeTable", code=status,
                                reason=f"table {self.physical_id} is {status}")
        return status == "ACTIVE"

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        changes = drop_none({
            "BillingMode": prop_diff.get("BillingMode"),
            "ProvisionedThroughput": prop_diff.get("ProvisionedThroughput")})
        if changes:
            self.client().update_table(TableName=self.physical_id, **changes)
        arn = self.data.get("arn")
        self.retag(prop_diff, self._live_tags,
                   remove=lambda keys: self.client().untag_resource(ResourceArn=arn,
                                                                    TagKeys=keys),
                   put=lambda tags: self.client().tag_resource(ResourceArn=arn, Tags=tags))

    def updated(self) -> bool:
        return self._status() == "ACTIVE"

    def delete(self, physical_id: str) -> None:
        self.client().delete_table(TableName=physical_id)

    def deleted(self, physical_id: str) -> bool:
        self.client().describe_table(TableName=physical_id)  # gone raises: done
        return False

    def observe(self) -> Mapping[str, Any] | None:
        found = self.present(lambda: self.client().describe_table(TableName=self.physical_id))
        if found is None:
            return None
        table = found["Table"]
        self._remember(table)
        throughput = table.get("ProvisionedThroughput") or {}
        observed: dict[str, Any] = {
            "KeySchema": table.get("KeySchema"),
            "BillingMode": (table.get("BillingModeSummary") or {}).get("BillingMode",
                                                                         "PROVISIONED"),
            "Tags": self.observed_tags(self._live_tags()),
        }
        if observed["BillingMode"] == "PROVISIONED":
            observed["ProvisionedThroughput"] = {k: throughput.get(k) for k in THROUGHPUT}
        return observed

    def _live_tags(self) -> list[dict[str, str]]:
        return list(self.client().list_tags_of_resource(
            ResourceArn=self.data.get("arn")).get("Tags") or [])

    def get_attribute(self, name: str) -> Any:
        return {"Arn": self.data.get("arn"),
                "StreamArn": self.data.get("stream_arn")}.get(name)
