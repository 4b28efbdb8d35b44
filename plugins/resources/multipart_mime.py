"""``OS::Heat::MultipartMime``: configs assembled into one MIME multipart message.

Heat lets a part's ``config`` be the id of another software config (typically
``get_resource`` of a CloudConfig) and reads that config through its software_configs API.
A plugin cannot read another resource's stored config, so Kiln refuses such a part with a
message that says to use ``get_attr: [<config>, config]``, which gives the text itself
and works on Heat too. Inline text and inline multipart messages are assembled as Heat
assembles them.
"""

from __future__ import annotations

import email
import email.message
import os
import uuid
from collections.abc import Mapping
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from typing import Any, ClassVar

from engine.errors import StackValidationFailed
from engine.schema import LIST, MAP, STRING, AllowedValues, Property
from plugins.resources.software_config import UNGROUPED, StoredConfig

TEXT, MULTIPART = "text", "multipart"


class MultipartMime(StoredConfig):
    """Assembles a collection of software configurations as a multi-part mime.

    Each part is either text, which becomes one MIME part (with ``subtype`` and
    ``filename``; without a subtype the filename up to its extension is used, as Heat
    does), or a multipart message, whose parts are appended one by one. The message is
    built once, at create, and stored: ``get_attr [m, config]`` returns it.
    """

    properties_schema: ClassVar[Mapping[str, Property]] = {
        "group": Property(
            STRING,
            "Namespace to group this multi-part configs by when delivered to a server. "
            "This may imply what configuration tool is going to perform the "
            "configuration.",
            default=UNGROUPED,
        ),
        "parts": Property(
            LIST, "Parts belonging to this message.",
            default=[],
            schema=Property(
                MAP,
                schema={
                    "config": Property(
                        STRING,
                        "Content of part to attach, either inline or by referencing the "
                        "ID of another software config resource.",
                        required=True,
                    ),
                    "filename": Property(
                        STRING, "Optional filename to associate with part."),
                    "type": Property(
                        STRING, "Whether the part content is text or multipart.",
                        default=TEXT, constraints=(AllowedValues((TEXT, MULTIPART)),),
                    ),
                    "subtype": Property(
                        STRING, "Optional subtype to specify with the type."),
                },
            ),
        ),
    }

    @classmethod
    def validate_properties(cls, properties: Mapping[str, Any]) -> None:
        for index, part in enumerate(properties["parts"] or []):
            config = part["config"]
            if _is_uuid_like(config):
                raise StackValidationFailed(
                    reason=f"Property error: parts[{index}].config: '{config}' is the id of "
                    "a software config, and Kiln cannot read a config by its id: use "
                    "{get_attr: [<config resource>, config]} to include its text"
                )

    def render_config(self) -> Any:
        parts: list[email.message.Message] = []
        for index, part in enumerate(self.properties["parts"] or []):
            if part["type"] == MULTIPART:
                parts.extend(_subparts(part["config"], index))
            else:
                parts.append(_text_part(part["config"], part["subtype"], part["filename"]))
        return MIMEMultipart(_subparts=parts).as_string()


def _subparts(text: str, index: int) -> list[email.message.Message]:
    """The parts of a multipart message, each rebuilt as a text part."""
    parsed = email.message_from_string(text)
    # Heat quietly drops a "multipart" config that is not a multipart message.
    if not parsed.is_multipart():
        return []
    parts: list[email.message.Message] = []
    for sub in parsed.get_payload():
        if not isinstance(sub, email.message.Message) or sub.is_multipart():
            raise ValueError(f"parts[{index}]: a multipart config cannot nest another "
                             "multipart message")
        parts.append(_text_part(_payload_text(sub), sub.get_content_subtype(),
                                sub.get_filename()))
    return parts


def _payload_text(part: email.message.Message) -> str:
    encoding = str(part.get("Content-Transfer-Encoding", "")).lower()
    if encoding in ("base64", "quoted-printable"):
        # NOTE: Heat re-wraps the encoded text itself, so a UTF-8 part of an appended
        # message arrives base64 twice over; Kiln decodes it first.
        raw = part.get_payload(decode=True)
        if isinstance(raw, bytes):
            return raw.decode(part.get_content_charset() or "utf-8", errors="replace")
    return str(part.get_payload())


def _text_part(text: str, subtype: str | None, filename: str | None) -> MIMEText:
    if not subtype and filename:
        subtype = os.path.splitext(filename)[0]
    try:
        text.encode("us-ascii")
        charset = "us-ascii"
    except UnicodeEncodeError:
        charset = "utf-8"
    part = (MIMEText(text, _subtype=subtype, _charset=charset) if subtype
            else MIMEText(text, _charset=charset))
    if filename:
        part.add_header("Content-Disposition", "attachment", filename=filename)
    return part


def _is_uuid_like(value: str) -> bool:
    """oslo.utils' test: the value is a uuid in any of the spellings ``uuid`` accepts."""
    try:
        canonical = str(uuid.UUID(value)).replace("-", "")
    except (TypeError, ValueError, AttributeError):
        return False
    bare = value.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "")
    return canonical == bare.lower()
