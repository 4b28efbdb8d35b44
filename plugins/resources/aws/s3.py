"""``AWS::S3::Bucket`` and ``AWS::S3::BucketPolicy``; a bucket's physical id is its name."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from engine.schema import MAP, STRING, AllowedValues, Attribute, Property
from plugins.resources.aws.common import TAGS, AwsResource

ACLS = ("Private", "PublicRead", "PublicReadWrite", "AuthenticatedRead",
        "BucketOwnerRead", "BucketOwnerFullControl", "LogDeliveryWrite")


def _canned(acl: str) -> str:
    """CloudFormation's ``PublicRead`` is S3's ``public-read``."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in acl).lstrip("-")


class Bucket(AwsResource):
    """An S3 bucket. A change of ``BucketName`` replaces it; tags, versioning and the
    canned ACL change in place. A bucket that still holds objects is not deleted (S3's
    ``BucketNotEmpty``), as in Heat."""

    service: ClassVar[str] = "s3"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "BucketName": Property(STRING, "The bucket's name; a stable lower-case name of "
                               "Kiln's when unset."),
        "AccessControl": Property(STRING, "A canned ACL for the bucket.", update_allowed=True,
                                  constraints=(AllowedValues(ACLS),)),
        "VersioningConfiguration": Property(
            MAP, "Versioning of the bucket's objects.", update_allowed=True,
            schema={"Status": Property(STRING, "Enabled or Suspended.", required=True,
                                       constraints=(AllowedValues(("Enabled",
                                                                   "Suspended")),))}),
        "Tags": TAGS,
    }
    attributes_schema: ClassVar[Mapping[str, Attribute]] = {
        "Arn": Attribute("The bucket's ARN.", "string"),
        "DomainName": Attribute("The DNS name of the bucket.", "string"),
        "RegionalDomainName": Attribute("The bucket's DNS name in its region.", "string"),
        "WebsiteURL": Attribute("The website endpoint of the bucket.", "string"),
    }

    def _name(self) -> str:
        return str(self.properties.get("BucketName") or self.stable_name(63, "a-z0-9-",
                                                                          lower=True))

    def find(self) -> str | None:
        name = self._name()
        if self.present(lambda: self.client().head_bucket(Bucket=name)) is None:
            return None
        self.data["region"] = self.runtime.service("aws").region
        return name

    def create(self) -> str:
        name = self._name()
        region = self.runtime.service("aws").region
        arguments: dict[str, Any] = {"Bucket": name}
        if region != "us-east-1":  # S3 refuses the default region as a constraint
            arguments["CreateBucketConfiguration"] = {"LocationConstraint": region}
        if self.properties.get("AccessControl"):
            arguments["ACL"] = _canned(self.properties["AccessControl"])
        self.client().create_bucket(**arguments)
        self.data["region"] = region
        self._put_tags(name)
        if self.properties.get("VersioningConfiguration"):
            self._put_versioning(name)
        return name

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        name = str(self.physical_id)
        if "Tags" in prop_diff:
            self._put_tags(name)
        if "VersioningConfiguration" in prop_diff and self.properties.get(
                "VersioningConfiguration"):
            self._put_versioning(name)
        if prop_diff.get("AccessControl"):
            self.client().put_bucket_acl(Bucket=name,
                                         ACL=_canned(self.properties["AccessControl"]))

    def delete(self, physical_id: str) -> None:
        self.client().delete_bucket(Bucket=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        name = self.physical_id
        if self.present(lambda: self.client().head_bucket(Bucket=name)) is None:
            return None
        observed: dict[str, Any] = {"Tags": self.observed_tags(self._live_tags())}
        status = self.client().get_bucket_versioning(Bucket=name).get("Status")
        if status:
            observed["VersioningConfiguration"] = {"Status": status}
        return observed

    def _live_tags(self) -> list[dict[str, str]]:
        found = self.present(lambda: self.client().get_bucket_tagging(
            Bucket=self.physical_id))
        return list((found or {}).get("TagSet") or [])

    def _put_tags(self, name: str) -> None:
        self.client().put_bucket_tagging(Bucket=name, Tagging={"TagSet": self.all_tags()})

    def _put_versioning(self, name: str) -> None:
        self.client().put_bucket_versioning(
            Bucket=name, VersioningConfiguration={
                "Status": self.properties["VersioningConfiguration"]["Status"]})

    def get_attribute(self, name: str) -> Any:
        bucket = self.physical_id
        if bucket is None:
            return None
        region = self.data.get("region", "us-east-1")
        return {
            "Arn": f"arn:aws:s3:::{bucket}",
            "DomainName": f"{bucket}.s3.amazonaws.com",
            "RegionalDomainName": f"{bucket}.s3.{region}.amazonaws.com",
            "WebsiteURL": f"http://{bucket}.s3-website-{region}.amazonaws.com",
        }.get(name)


class BucketPolicy(AwsResource):
    """The policy of a bucket; its physical id is the bucket's name. A change of
    ``Bucket`` replaces it (the old bucket's policy is removed); the document changes in
    place."""

    service: ClassVar[str] = "s3"
    properties_schema: ClassVar[Mapping[str, Property]] = {
        "Bucket": Property(STRING, "The bucket the policy applies to.", required=True),
        "PolicyDocument": Property(MAP, "The policy (IAM policy language).", required=True,
                                   update_allowed=True),
    }

    def create(self) -> str:
        bucket = str(self.properties["Bucket"])
        self._put(bucket)
        return bucket

    def update(self, prop_diff: Mapping[str, Any]) -> None:
        self._put(str(self.physical_id))

    def _put(self, bucket: str) -> None:
        self.client().put_bucket_policy(Bucket=bucket,
                                        Policy=json.dumps(self.properties["PolicyDocument"]))

    def delete(self, physical_id: str) -> None:
        self.client().delete_bucket_policy(Bucket=physical_id)

    def observe(self) -> Mapping[str, Any] | None:
        found = self.present(lambda: self.client().get_bucket_policy(Bucket=self.physical_id))
        if found is None:
            return None
        return {"PolicyDocument": json.loads(found["Policy"])}
