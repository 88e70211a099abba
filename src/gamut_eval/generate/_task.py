"""The Inspect task: ``inspect eval gamut_eval/gamut --model M -T dataset=... -T judge=...``,
and its samples: dataset records in the multimodal or the text-only setting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from gamut_eval.data import dataset_reference, resolve_dataset_path
from gamut_eval.dataset import Dataset, DatasetRecord, load_dataset
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import Solver

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


ANSWER_MAX_RETRIES = 6
"""Retries of one failed request to an answering model."""
ANSWER_TIMEOUT_S = 300
"""Seconds one attempt of a request to an answering model may take."""

NO_JUDGE = (
    "no judge (-T judge=MODEL): the answers are generated but not scored. Score them now "
    "with -T judge=MODEL (gamut/offline needs no service), or later with `inspect score "
    "LOG --scorer gamut_eval/gamut_scorer -S judge=MODEL -S dataset={dataset}`"
)
"""What ``inspect eval gamut_eval/gamut`` without a judge says (through the log, which
Inspect shows on the terminal and in the eval log)."""

SETTING_CHOICES = ("multimodal", "text_only")


def verbatim_system_message(text: str) -> Solver:
    """A solver that puts ``text`` first in the conversation as a system message.

    Not Inspect's ``system_message`` solver: that one reads ``text`` as a file or URL when
    one exists by that name, and fills ``{placeholders}`` from the sample's metadata, which
    holds the entity: ``{entity}`` would name it in the multimodal setting.
    """
    from inspect_ai.model import ChatMessageSystem
    from inspect_ai.solver import Generate, TaskState, solver

    @solver(name="gamut_system_message")
    def system_text() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.messages.insert(0, ChatMessageSystem(content=text))
            return state

        return solve

    return system_text()


def gamut_task(
    dataset: str | None = None,
    setting: str = "multimodal",
    judge: str | None = None,
    judge_image: bool = False,
    store: str | None = None,
    system_message: str | None = None,
    image_root: str | None = None,
) -> Task:
    """The GAMUT benchmark as an Inspect task in one setting.

    Args:
        dataset: Dataset JSONL, or ``sample`` (default) for the bundled sample benchmark.
        setting: ``multimodal`` (image + question) or ``text_only`` (entity named in text).
        judge: Judge model; when given, each answer is scored with the Gamut scorer and every
            check's verdict is stored in the score's metadata. Without it the task only
            generates answers (score them later with ``inspect score`` or ``gamut judge``;
            the registered task says so, ``NO_JUDGE``).
        judge_image: Show the judge the image too.
        store: Verdict store for the scorer (SQLite), so re-scoring is incremental.
        system_message: A system message put before every question, verbatim.
        image_root: The folder the dataset's image paths are relative to and must stay
            inside (default: the dataset file's folder).
    """
    from inspect_ai import Task
    from inspect_ai.model import GenerateConfig
    from inspect_ai.solver import generate

    from gamut_eval.generate._inspect_scorer import gamut_scorer
    from gamut_eval.generate._tokens import ensure_o200k_base

    ensure_o200k_base()  # token counts without a download (mockllm reports no usage)

    if setting not in SETTING_CHOICES:
        raise InputError(f"setting must be one of {', '.join(SETTING_CHOICES)}; got {setting!r}")
    path = resolve_dataset_path(dataset)
    data = load_dataset(path, image_root=image_root)
    setting_name: Setting = "multimodal" if setting == "multimodal" else "text_only"
    reference = dataset_reference(path)
    scorer = (
        gamut_scorer(judge=judge, dataset=str(path), judge_image=judge_image, store=store)
        if judge
        else None
    )
    solver: list[Solver] = [generate()]
    if system_message:
        solver.insert(0, verbatim_system_message(system_message))
    return Task(
        name=f"gamut_{setting}",
        dataset=samples_for(data, setting_name),
        solver=solver,
        scorer=scorer,
        metadata={"gamut_dataset": reference, "gamut_setting": setting},
        # Inspect retries a failing request without end by default: a server that fails
        # every request the same way would hold the run forever, silently.
        config=GenerateConfig(max_retries=ANSWER_MAX_RETRIES, attempt_timeout=ANSWER_TIMEOUT_S),
    )
