"""OS::Heat::MultipartMime: parts assembled into one MIME message, as Heat assembles them."""

from __future__ import annotations

import email
import email.message
import uuid
from email.mime.multipart import MIMEMultipart
from typing import Any

import pytest

from engine.errors import StackValidationFailed
from engine.resources.base import Resource
from plugins.resources.multipart_mime import MultipartMime
from tests.unit.plugins.resources.conftest import Build, FakeRuntime


def created(build: Build, parts: list[dict[str, Any]], **raw: Any) -> Resource:
    res = build(MultipartMime, {"parts": parts, **raw}, name="mime")
    res.validate()
    assert res.check_create_complete(res.handle_create()) is True
    return res


def parsed(res: Resource) -> list[email.message.Message]:
    message = email.message_from_string(res.get_attribute("config"))
    assert message.get_content_type() == "multipart/mixed"
    payload = message.get_payload()
    assert isinstance(payload, list)
    return payload


def test_a_text_part_is_text_plain_without_subtype_or_filename(build: Build) -> None:
    (part,) = parsed(created(build, [{"config": "echo hi"}]))

    assert part.get_content_type() == "text/plain"
    assert part.get_content_charset() == "us-ascii"
    assert part["Content-Transfer-Encoding"] == "7bit"
    assert part.get_filename() is None
    assert part.get_payload() == "echo hi"


def test_subtype_and_filename(build: Build) -> None:
    (part,) = parsed(created(build, [{"config": "#!/bin/sh\n", "subtype": "x-shellscript",
                                      "filename": "boot.sh"}]))

    assert part.get_content_type() == "text/x-shellscript"
    assert part["Content-Disposition"] == 'attachment; filename="boot.sh"'


def test_without_a_subtype_the_filename_stem_is_the_subtype_as_in_heat(build: Build) -> None:
    (part,) = parsed(created(build, [{"config": "a: 1", "filename": "cloud-config.yaml"}]))

    assert part.get_content_type() == "text/cloud-config"
    assert part.get_filename() == "cloud-config.yaml"


def test_non_ascii_text_is_utf8_in_base64(build: Build) -> None:
    (part,) = parsed(created(build, [{"config": "echo é"}]))

    assert part.get_content_charset() == "utf-8"
    assert part["Content-Transfer-Encoding"] == "base64"
    assert part.get_payload(decode=True) == "echo é".encode()


def test_parts_keep_their_order(build: Build) -> None:
    parts = parsed(created(build, [{"config": "one"}, {"config": "two"}, {"config": "3"}]))

    assert [p.get_payload() for p in parts] == ["one", "two", "3"]


def test_a_multipart_part_appends_each_of_its_parts(build: Build) -> None:
    inner = created(build, [{"config": "#!/bin/sh\n", "subtype": "x-shellscript",
                             "filename": "a.sh"},
                            {"config": "é", "filename": "notes"}]).get_attribute("config")

    parts = parsed(created(build, [{"config": "first"},
                                   {"config": inner, "type": "multipart"},
                                   {"config": "last"}]))

    assert [(p.get_content_type(), p.get_filename()) for p in parts] == [
        ("text/plain", None), ("text/x-shellscript", "a.sh"), ("text/notes", "notes"),
        ("text/plain", None)]
    assert parts[1].get_payload() == "#!/bin/sh\n"
    # Decoded before being wrapped again (Heat would wrap the base64 text itself).
    assert parts[2].get_payload(decode=True) == "é".encode()


def test_a_multipart_part_that_is_not_mime_is_dropped_as_in_heat(build: Build) -> None:
    parts = parsed(created(build, [{"config": "not a message", "type": "multipart"},
                                   {"config": "kept"}]))

    assert [p.get_payload() for p in parts] == ["kept"]


def test_a_multipart_nested_in_an_appended_message_fails_the_create(build: Build) -> None:
    inner = created(build, [{"config": "x"}]).get_attribute("config")
    outer = MIMEMultipart(_subparts=[email.message_from_string(inner)]).as_string()
    res = build(MultipartMime, {"parts": [{"config": outer, "type": "multipart"}]})

    with pytest.raises(ValueError, match=r"^parts\[0\]: a multipart config cannot nest"):
        res.handle_create()
    assert res.physical_id is None


def test_no_parts_is_an_empty_multipart_message(build: Build) -> None:
    res = created(build, [])

    assert res.properties["parts"] == []
    assert res.get_attribute("config").startswith("Content-Type: multipart/mixed;")
    assert "text/" not in res.get_attribute("config")


def test_a_part_needs_config(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="Property config not assigned"):
        build(MultipartMime, {"parts": [{"filename": "x"}]})


def test_a_part_type_outside_text_and_multipart_is_refused(build: Build) -> None:
    with pytest.raises(StackValidationFailed, match="not an allowed value"):
        build(MultipartMime, {"parts": [{"config": "x", "type": "binary"}]})


def test_a_config_id_is_replaced_by_that_configs_text(build: Build,
                                                     runtime: FakeRuntime) -> None:
    config_id = "5da8e1a1-4b66-4c85-8f5c-32c540c2750b"
    runtime.configs.create_config(config_id=config_id, name="c", group="Heat::Ungrouped",
                                  config="#cloud-config\n", inputs=[], outputs=[],
                                  options=None)

    _, part = parsed(created(build, [{"config": "inline"}, {"config": config_id}]))

    assert part.get_payload() == "#cloud-config\n"


def test_an_id_no_config_has_is_text_as_in_heat(build: Build) -> None:
    missing = "8f48bc03-d7c1-4302-b43f-51a7305857bd"
    (part,) = parsed(created(build, [{"config": missing}]))

    assert part.get_payload() == missing


def test_a_structured_config_cannot_be_a_part(build: Build, runtime: FakeRuntime) -> None:
    config_id = "43a7473f-319e-40c7-b966-e1a4f562569d"
    runtime.configs.create_config(config_id=config_id, name="c", group="g",
                                  config={"k": 1}, inputs=[], outputs=[], options=None)
    res = build(MultipartMime, {"parts": [{"config": config_id}]})

    with pytest.raises(ValueError, match=r"parts\[0\].config: .* is not text"):
        res.handle_create()


def test_text_that_merely_contains_a_uuid_is_inline(build: Build) -> None:
    text = f"id={uuid.uuid4()}"
    (part,) = parsed(created(build, [{"config": text}]))

    assert part.get_payload() == text


def test_the_message_is_built_once_and_kept(build: Build, runtime: FakeRuntime) -> None:
    res = created(build, [{"config": "x"}])
    message = res.get_attribute("config")

    # The boundary is random: a resumed create must not build a different message.
    resumed = build(MultipartMime, {"parts": [{"config": "x"}]},
                    physical_id=res.physical_id, data=dict(res.data))
    resumed.handle_create()
    assert resumed.get_attribute("config") == message
    assert runtime.recorded == [res.physical_id]
    assert runtime.recorded_data["config"] == message
    assert res.data["group"] == "Heat::Ungrouped"


def test_group_is_stored(build: Build) -> None:
    assert created(build, [], group="script").data["group"] == "script"


def test_schema_matches_heat() -> None:
    schema = {k: p.describe() for k, p in MultipartMime.properties_schema.items()}

    assert schema["group"]["default"] == "Heat::Ungrouped"
    assert schema["parts"]["default"] == []
    part = schema["parts"]["schema"]["*"]["schema"]
    assert part["config"]["required"] is True
    assert part["type"]["default"] == "text"
    assert part["type"]["constraints"] == [{"allowed_values": ["text", "multipart"]}]
    assert set(part) == {"config", "filename", "type", "subtype"}
    assert not any(p["update_allowed"] for p in schema.values())
    assert list(MultipartMime.attributes_schema) == ["config"]
    assert MultipartMime.support_version == "2014.1"
    assert MultipartMime.describe() == (
        "Assembles a collection of software configurations as a multi-part mime.")
