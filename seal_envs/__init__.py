"""SEAL-Gym environments: multi-turn tool use with executable verification and evolving surfaces.

``import seal_envs`` registers the ids (``seal/ToolUse-v0`` and friends) with Gymnasium;
``gym.make("seal_envs:seal/ToolUse-v0")`` does the same without an explicit import.
"""

from seal_envs.core.diagnosis import LABELS, diagnose
from seal_envs.core.official import OFFICIAL_TAG_OF_LABEL, OFFICIAL_TAGS, official_tag_of_step
from seal_envs.core.surface import CANONICAL, FrozenSurfaceError, Surface, SurfacePatch
from seal_envs.coevolution import CoEvolution
from seal_envs.core.types import CallEvent, StepLabel, Task, ToolCall, ToolSpec, Verdict
from seal_envs.env import ToolUseEnv
from seal_envs.registration import register_all, register_domain, registered_ids
from seal_envs.tasks import TaskSet, default_task_set, task_from_id

register_all()

__all__ = [
    "CANONICAL", "CallEvent", "CoEvolution", "FrozenSurfaceError", "LABELS", "OFFICIAL_TAGS", "OFFICIAL_TAG_OF_LABEL",
    "StepLabel", "Surface", "SurfacePatch", "Task", "TaskSet", "ToolCall", "ToolSpec", "ToolUseEnv", "Verdict",
    "default_task_set", "diagnose", "official_tag_of_step", "register_domain", "registered_ids", "task_from_id",
]
