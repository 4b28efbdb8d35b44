"""engine.worker.step_writes: a failed resource's reason names the error as Heat does."""

from __future__ import annotations

from engine import errors
from engine.worker.step_writes import failure_reason


def test_a_failure_reason_names_heats_type_where_it_differs_from_kilns_class() -> None:
    # Heat's lookup raises its generic NotFound; the reason carries that name.
    assert failure_reason(errors.SoftwareConfigNotFound(id="c1"), "dep", ()) == (
        "NotFound: resources.dep: Software config with id c1 not found")


def test_a_failure_reason_masks_hidden_values_and_names_the_class_otherwise() -> None:
    assert failure_reason(ValueError("the secret s3cr3t leaked"), "r", ("s3cr3t",)) == (
        "ValueError: resources.r: the secret ****** leaked")
