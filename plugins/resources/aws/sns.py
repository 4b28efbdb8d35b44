"""``AWS::SNS::Topic`` (with inline subscriptions) and ``AWS::SNS::Subscription``; the
physical ids are ARNs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from engine.schema import LIST, MAP, STRING, Attribute, Property
from plugins.resources.aws.common import TAGS, AwsResource, in_template_order

PROTOCOLS = ("http", "https", "email", "email-json", "sms", "sqs", "application", "lambda",
             "firehose")
SUBSCRIPTION = {
    "Endpoint": Property(STRING, "Where notifications go (a URL, an address, an ARN).",
                         required=True),
    "Protocol": Property(STRING, "How they go: " + ", ".join(PROTOCOLS) + ".",
                         required=True),
}


def _pair(subscription: Mapping[str, Any]) -> tuple[str, str]:
    return str(subscription["Protocol"]), str(subscription["Endpoint"])


class Topic(AwsResource):
    """An SNS topic. A change of ``TopicName`` replaces it; the display name, the
    subscriptions (added and removed by difference) and the tags change in place."""

    service: ClassVar[str] = "sns"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "TopicName": Property(STRING, "The topic's name; a stable name of Kiln's when "
                              "unset."),
        "DisplayName": Property(STRING, "The display name (SMS sender).", update_allowed=True),
        "Subscription": Property(LIST, "Subscriptions to the topic.", update_allowed=True,
                                 schema=Property(MAP, schema=SUBSCRIPTION)),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "TopicArn": Attribute("The topic's ARN.", "string"),
        "TopicName": Attribute("The topic's name.", "string"),
    }

    def create(self) -> str:
        name = str(self.properties.get("TopicName") or self.stable_name(256, r"A-Za-z0-9_-"))
        attributes = ({"DisplayName": self.properties["DisplayName"]}
                      if self.properties.get("DisplayName") else {})
        # CreateTopic returns the existing topic of that name: a resumed create is safe.
        arn = str(self.client().create_topic(Name=name, Attributes=attributes,
                                             Tags=self.all_tags())["TopicArn"])
        self._subscribe(arn, self._wanted() - self._subscriptions(arn).keys())
        return arn

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        arn = str(self.physical_id)
        if "DisplayName" in prop_diff:
            self.client().set_topic_attributes(
                TopicArn=arn, AttributeName="DisplayName",
                AttributeValue=self.properties.get("DisplayName") or "")
        if "Subscription" in prop_diff:
            live = self._subscriptions(arn)
            for pair in live.keys() - self._wanted():
                self.client().unsubscribe(SubscriptionArn=live[pair])
            self._subscribe(arn, self._wanted() - live.keys())
        self.retag(prop_diff, self._live_tags,
                   remove=lambda keys: self.client().untag_resource(ResourceArn=arn,
                                                                    TagKeys=keys),
                   put=lambda tags: self.client().tag_resource(ResourceArn=arn, Tags=tags))

    def delete(self, physical_id: str) -> None:
        self.client().delete_topic(TopicArn=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        arn = self.physical_id
        live = self.present(lambda: self.client().get_topic_attributes(TopicArn=arn))
        if live is None:
            return None
        observed: dict[str, Any] = {
            "DisplayName": live["Attributes"].get("DisplayName") or None,
            "Tags": self.observed_tags(self._live_tags())}
        live_subscriptions = [{"Endpoint": endpoint, "Protocol": protocol}
                              for protocol, endpoint in self._subscriptions(str(arn))]
        observed["Subscription"] = in_template_order(
            live_subscriptions, self.properties.get("Subscription") or [], key=_pair)
        return observed

    def _wanted(self) -> set[tuple[str, str]]:
        return {_pair(s) for s in self.properties.get("Subscription") or []}

    def _subscriptions(self, arn: str) -> dict[tuple[str, str], str]:
        found = self.client().list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]
        return {(s["Protocol"], s["Endpoint"]): s["SubscriptionArn"] for s in found}

    def _subscribe(self, arn: str, pairs: set[tuple[str, str]]) -> None:
        for protocol, endpoint in sorted(pairs):
            self.client().subscribe(TopicArn=arn, Protocol=protocol, Endpoint=endpoint)

    def _live_tags(self) -> list[dict[str, str]]:
        return list(self.client().list_tags_for_resource(
            ResourceArn=self.physical_id).get("Tags") or [])

    def get_attribute(self, name: str) -> Any:
        arn = self.physical_id
        if name == "TopicArn":
            return arn
        if name == "TopicName" and arn:
            return arn.rsplit(":", 1)[-1]
        return None


class Subscription(AwsResource):
    """One subscription to a topic; any change replaces it."""

    service: ClassVar[str] = "sns"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "TopicArn": Property(STRING, "The topic's ARN.", required=True),
        **SUBSCRIPTION,
    }

    def find(self) -> str | None:
        topic = str(self.properties["TopicArn"])
        found = self.present(lambda: self.client().list_subscriptions_by_topic(
            TopicArn=topic)["Subscriptions"])
        for subscription in found or []:
            if _pair(subscription) == _pair(self.properties):
                return str(subscription["SubscriptionArn"])
        return None

    def create(self) -> str:
        return str(self.client().subscribe(
            TopicArn=self.properties["TopicArn"], Protocol=self.properties["Protocol"],
            Endpoint=self.properties["Endpoint"], ReturnSubscriptionArn=True
        )["SubscriptionArn"])

    def delete(self, physical_id: str) -> None:
        self.client().unsubscribe(SubscriptionArn=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        live = self.present(lambda: self.client().get_subscription_attributes(
            SubscriptionArn=self.physical_id)["Attributes"])
        if live is None:
            return None
        return {"TopicArn": live.get("TopicArn"), "Protocol": live.get("Protocol"),
                "Endpoint": live.get("Endpoint")}
