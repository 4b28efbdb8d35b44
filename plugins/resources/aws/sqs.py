"""``AWS::SQS::Queue``: CloudFormation's properties; the physical id is the queue URL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.schema import BOOLEAN, INTEGER, STRING, Attribute, Property, Range
from plugins.resources.aws.common import TAGS, AwsResource

#: Property -> SQS attribute name, for the attributes an update may change.
SETTINGS = {
    "DelaySeconds": Range(0, 900),
    "MaximumMessageSize": Range(1024, 262144),
    "MessageRetentionPeriod": Range(60, 1209600),
    "ReceiveMessageWaitTimeSeconds": Range(0, 20),
    "VisibilityTimeout": Range(0, 43200),
}


class Queue(AwsResource):
    """An SQS queue. A change of ``QueueName`` or ``FifoQueue`` replaces it; the
    settings and tags change in place."""

    service: ClassVar[str] = "sqs"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "QueueName": Property(STRING, "The queue's name; a stable name of Kiln's when "
                              "unset (FIFO queues get the .fifo suffix)."),
        "FifoQueue": Property(BOOLEAN, "A FIFO queue."),
        **{name: Property(INTEGER, f"The queue's {name}.", update_allowed=True,
                          constraints=(limits,))
           for name, limits in SETTINGS.items()},
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "Arn": Attribute("The queue's ARN.", "string"),
        "QueueName": Attribute("The queue's name.", "string"),
        "QueueUrl": Attribute("The queue's URL.", "string"),
    }

    def _name(self) -> str:
        given = self.properties.get("QueueName")
        if given:
            return str(given)
        fifo = bool(self.properties.get("FifoQueue"))
        name = self.stable_name(80 - (5 if fifo else 0), r"A-Za-z0-9_-")
        return f"{name}.fifo" if fifo else name

    def _settings(self, names: Any = SETTINGS) -> dict[str, str]:
        return {name: str(self.properties[name]) for name in names
                if name in SETTINGS and self.properties.get(name) is not None}

    def create(self) -> str:
        attributes = self._settings()
        if self.properties.get("FifoQueue"):
            attributes["FifoQueue"] = "true"
        # CreateQueue is idempotent for one name and the same attributes, so a resumed
        # create gets the same queue back.
        response = self.client().create_queue(
            QueueName=self._name(), Attributes=attributes,
            tags={t["Key"]: t["Value"] for t in self.all_tags()})
        url = str(response["QueueUrl"])
        arn = self.client().get_queue_attributes(
            QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.data.update(arn=arn, name=url.rstrip("/").rsplit("/", 1)[-1])
        return url

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        url = self.physical_id
        changed = self._settings(prop_diff)
        if changed:
            self.client().set_queue_attributes(QueueUrl=url, Attributes=changed)
        self.retag(prop_diff, self._live_tags,
                   remove=lambda keys: self.client().untag_queue(QueueUrl=url, TagKeys=keys),
                   put=lambda tags: self.client().tag_queue(
                       QueueUrl=url, Tags={t["Key"]: t["Value"] for t in tags}))

    def delete(self, physical_id: str) -> None:
        self.client().delete_queue(QueueUrl=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        live = self.present(lambda: self.client().get_queue_attributes(
            QueueUrl=self.physical_id, AttributeNames=["All"])["Attributes"])
        if live is None:
            return None
        observed: dict[str, Any] = {name: int(live[name]) for name in SETTINGS
                                    if name in live}
        observed["Tags"] = self.observed_tags(self._live_tags())
        return observed

    def _live_tags(self) -> list[dict[str, str]]:
        tags = self.client().list_queue_tags(QueueUrl=self.physical_id).get("Tags") or {}
        return [{"Key": k, "Value": v} for k, v in tags.items()]

    def get_attribute(self, name: str) -> Any:
        if name == "QueueUrl":
            return self.physical_id
        if name == "Arn":
            return self.data.get("arn")
        if name == "QueueName":
            return self.data.get("name")
        return None
