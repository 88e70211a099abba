"""Dataset records as Inspect samples, in the multimodal or the text-only setting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from gamut_eval.dataset import Dataset, DatasetRecord
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from inspect_ai.dataset import Sample

Setting = Literal["multimodal", "text_only"]


def record_sample(dataset: Dataset, record: DatasetRecord, setting: Setting) -> Sample:
    """One question as the model is asked it: the image and the question (multimodal), or
    the question with the entity named in text and no image (text-only)."""
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    metadata = {
        "question_id": record.id,
        "setting": setting,
        "domain": record.domain,
        "entity": record.entity,
    }
    if setting == "text_only":
        return Sample(id=record.id, input=record.text_only_question(), metadata=metadata)
    image = dataset.image_path(record)
    if image is None:
        raise InputError(
            f"{dataset.path}: question {record.id!r} has no image, so it cannot be asked in the "
            "multimodal setting; add `image` or use setting text_only",
            setting="setting",
        )
    content = [ContentImage(image=str(image)), ContentText(text=record.question)]
    return Sample(id=record.id, input=[ChatMessageUser(content=content)], metadata=metadata)


def samples_for(dataset: Dataset, setting: Setting) -> list[Sample]:
    return [record_sample(dataset, record, setting) for record in dataset]
