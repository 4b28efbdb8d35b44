"""The config types, Delay and TestResource's check through the real python-heatclient
against kiln-all: what a template reads from them, and what the API shows."""

from __future__ import annotations

import datetime
import email
import time
import uuid
from typing import Any

import pytest
from heatclient import exc as heat_exc

from tests.functional import servers
from tests.functional.conftest import heat_for, unique, wait_for_status

CONFIGS = """\
heat_template_version: 2018-08-31
parameters:
  greeting: {type: string, default: hello}
resources:
  boot:
    type: OS::Heat::CloudConfig
    properties:
      cloud_config:
        runcmd:
          - {list_join: [" ", [echo, {get_param: greeting}]]}
        package_update: true
  script:
    type: OS::Heat::SoftwareConfig
    properties:
      group: script
      config: |
        #!/bin/sh
        echo hi
      inputs: [{name: count, type: Number, default: "3"}]
      outputs: [{name: result}]
  structured:
    type: OS::Heat::StructuredConfig
    properties:
      config: {greeting: {get_param: greeting}, nested: [1, {get_input: foo}]}
  mime:
    type: OS::Heat::MultipartMime
    properties:
      parts:
        - config: {get_attr: [boot, config]}
          filename: cloud-config.yaml
        - config: {get_attr: [script, config]}
          subtype: x-shellscript
          filename: run.sh
  pause:
    type: OS::Heat::Delay
    depends_on: mime
    properties: {min_wait: 1.5}
  after:
    type: OS::Heat::TestResource
    depends_on: pause
    properties: {value: {get_resource: pause}}
outputs:
  boot_id: {value: {get_resource: boot}}
  boot_config: {value: {get_attr: [boot, config]}}
  script_config: {value: {get_attr: [script, config]}}
  structured: {value: {get_attr: [structured, config]}}
  mime: {value: {get_attr: [mime, config]}}
  after: {value: {get_attr: [after, output]}}
"""

BY_ID = """\
heat_template_version: 2018-08-31
resources:
  boot:
    type: OS::Heat::CloudConfig
    properties: {cloud_config: {runcmd: [ls]}}
  mime:
    type: OS::Heat::MultipartMime
    properties:
      parts: [{config: {get_resource: boot}}]
outputs:
  mime: {value: {get_attr: [mime, config]}}
"""

SLOW_DELETE = """\
heat_template_version: 2018-08-31
resources:
  pause:
    type: OS::Heat::Delay
    properties: {min_wait: 1.5, actions: [DELETE]}
"""

CHECKED = """\
heat_template_version: 2018-08-31
resources:
  a:
    type: OS::Heat::TestResource
  b:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [a, output]}}
"""


@pytest.fixture(scope="module")
def heat(kiln_all: servers.Kiln) -> Any:
    return heat_for(kiln_all, servers.new_tenant(kiln_all.env, unique("types-")))


@pytest.fixture(scope="module")
def configs(heat: Any) -> dict[str, Any]:
    """One stack of every config type, a Delay and a TestResource after it."""
    stack_id = heat.stacks.create(stack_name=unique("cfg"), template=CONFIGS)["stack"]["id"]
    stack = wait_for_status(heat, stack_id, "CREATE_COMPLETE")
    return {"id": stack_id,
            "outputs": {o["output_key"]: o["output_value"] for o in stack.outputs},
            "resources": {r.resource_name: r for r in heat.resources.list(stack_id)}}


def event_time(event: Any) -> datetime.datetime:
    return datetime.datetime.fromisoformat(event.event_time.replace("Z", "+00:00"))


def test_config_ids_are_uuids_and_references(configs: dict[str, Any]) -> None:
    resources = configs["resources"]

    for name in ("boot", "script", "structured", "mime"):
        assert uuid.UUID(resources[name].physical_resource_id).version == 4
    assert configs["outputs"]["boot_id"] == resources["boot"].physical_resource_id


def test_cloud_config_is_rendered_yaml(configs: dict[str, Any]) -> None:
    assert configs["outputs"]["boot_config"] == (
        "#cloud-config\npackage_update: true\nruncmd:\n- echo hello\n")


def test_software_and_structured_configs_read_back(configs: dict[str, Any]) -> None:
    assert configs["outputs"]["script_config"] == "#!/bin/sh\necho hi\n"
    # get_input is not a template function: it is kept for the deployment to substitute.
    assert configs["outputs"]["structured"] == {"greeting": "hello",
                                                "nested": [1, {"get_input": "foo"}]}


def test_multipart_mime_assembles_the_parts(configs: dict[str, Any]) -> None:
    message = email.message_from_string(configs["outputs"]["mime"])
    parts = message.get_payload()

    assert message.get_content_type() == "multipart/mixed"
    assert [(p.get_content_type(), p.get_filename()) for p in parts] == [
        ("text/cloud-config", "cloud-config.yaml"), ("text/x-shellscript", "run.sh")]
    assert parts[0].get_payload() == configs["outputs"]["boot_config"]
    assert parts[1].get_payload() == "#!/bin/sh\necho hi\n"


def test_the_config_attribute_in_resource_show(heat: Any, configs: dict[str, Any]) -> None:
    shown = heat.resources.get(configs["id"], "mime")

    assert shown.resource_type == "OS::Heat::MultipartMime"
    assert shown.attributes["config"] == configs["outputs"]["mime"]
    assert heat.resources.get(configs["id"], "structured").attributes["config"] == (
        configs["outputs"]["structured"])


def test_delay_waits_and_has_no_physical_id(heat: Any, configs: dict[str, Any]) -> None:
    pause = configs["resources"]["pause"]
    assert pause.physical_resource_id == ""
    # Heat's reference of a resource without a physical id is its name.
    assert configs["outputs"]["after"] == "pause"

    events = [e for e in heat.events.list(configs["id"], sort_dir="asc")
              if e.resource_name == "pause"]
    started = next(e for e in events if e.resource_status == "CREATE_IN_PROGRESS")
    done = next(e for e in events if e.resource_status == "CREATE_COMPLETE")
    assert (event_time(done) - event_time(started)).total_seconds() >= 1


def test_delay_on_delete(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("del"), template=SLOW_DELETE
                                  )["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE", timeout=5)

    started = time.monotonic()
    heat.stacks.delete(stack_id)
    wait_for_status(heat, stack_id, "DELETE_COMPLETE")
    assert time.monotonic() - started >= 1.5


def test_a_config_referenced_by_id_is_read_into_the_mime(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("byid"), template=BY_ID)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    message = email.message_from_string(
        heat.stacks.output_show(stack_id, "mime")["output"]["output_value"])
    (part,) = message.get_payload()
    assert part.get_payload() == "#cloud-config\nruncmd:\n- ls\n"


def test_a_static_input_default_of_the_wrong_type_is_a_400(heat: Any) -> None:
    template = CONFIGS.replace('default: "3"', "default: three")

    with pytest.raises(heat_exc.HTTPBadRequest) as raised:
        heat.stacks.create(stack_name=unique("bad"), template=template)
    assert ("resources.script.properties: Property error: inputs[0].default: "
            "Value 'three' is not a number") in str(raised.value)


def test_test_resource_has_a_real_check(heat: Any) -> None:
    stack_id = heat.stacks.create(stack_name=unique("chk"), template=CHECKED)["stack"]["id"]
    wait_for_status(heat, stack_id, "CREATE_COMPLETE")

    heat.actions.check(stack_id)
    stack = wait_for_status(heat, stack_id, "CHECK_COMPLETE")
    # Every type in the stack checks for real: no "not fully supported" caveat.
    assert stack.stack_status_reason == "Stack CHECK completed successfully"


def test_resource_types_lists_and_shows_the_new_types(heat: Any) -> None:
    names = {t.resource_type for t in heat.resource_types.list()}
    assert {"OS::Heat::CloudConfig", "OS::Heat::MultipartMime", "OS::Heat::SoftwareConfig",
            "OS::Heat::StructuredConfig", "OS::Heat::Delay"} <= names

    delay = heat.resource_types.get("OS::Heat::Delay")
    assert delay["support_status"]["version"] == "11.0.0"
    assert set(delay["properties"]) == {"min_wait", "max_jitter", "jitter_multiplier",
                                        "actions"}
    assert delay["properties"]["actions"]["default"] == ["CREATE"]
    assert set(delay["attributes"]) == {"show"}
    mime = heat.resource_types.get("OS::Heat::MultipartMime")
    assert set(mime["properties"]["parts"]["schema"]["*"]["schema"]) == {
        "config", "filename", "type", "subtype"}
    assert set(mime["attributes"]) == {"config", "show"}
