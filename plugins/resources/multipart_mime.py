"""``OS::Heat::MultipartMime``: configs assembled into one MIME multipart message.

A part's ``config`` is text, or the id of a software config (typically ``get_resource``
of a CloudConfig), whose config is read from the tenant's software configs
(``Runtime.software_configs``) as Heat reads it; an id no config has is taken as text,
as in Heat. Parts and inline multipart messages are assembled as Heat assembles them.
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

    def render_config(self) -> Any:
        parts: list[email.message.Message] = []
        for index, part in enumerate(self.properties["parts"] or []):
            text = self._part_text(part["config"], index)
            if part["type"] == MULTIPART:
                parts.extend(_subparts(text, index))
            else:
                parts.append(_text_part(text, part["subtype"], part["filename"]))
        return MIMEMultipart(_subparts=parts).as_string()

    def _part_text(self, config: str, index: int) -> str:
        """The part's text: the config of the software config it names, else itself."""
        if not _is_uuid_like(config):
            return config
        found = self.runtime.software_configs().get_config(config)
        if found is None:
            return config
        text = found.get("config")
        if not isinstance(text, str):
            raise ValueError(f"parts[{index}].config: software config {config} is not text "
                             "(a structured config cannot be a MIME part)")
        return text


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
