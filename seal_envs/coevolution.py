"""Co-evolution, owned in one place: one evolver and one training surface for every env that
plays the training tasks, whatever loop drives them.

Envs only show the surface they are given. A :class:`CoEvolution` counts the diagnoses of
finished episodes, closes a batch into its evolver, applies the patches to its surface and hands
that surface (and curriculum weights) to envs. The same object serves three loops:

    co = CoEvolution(Evolver(window=1, min_episodes=4))
    # a plain Gymnasium loop (one process)
    patches = co.evolve(final_infos); co.apply(env)
    # a vector env: every copy gets the same surface, sync or async
    co.apply(envs)
    # several processes (the trainer): count locally, gather, merge in rank order
    counts = CoEvolution.count(final_infos)          # pure; picklable
    co.step(gather_object(counts)); co.apply(local_envs)

Counts merge by addition, so the order of ranks does not change the sum; every rank runs the
same deterministic update on the same sums and ends with the same evolver and surface.
Evaluation envs hold the canonical surface frozen and are skipped. A surface with a preset
(``observation_lite``) is handed out even when evolution is off: it is the training surface.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from seal_envs.core.evolver import Count, EpisodeDiagnosis, Evolver, count_diagnoses
from seal_envs.core.surface import CANONICAL, Surface, SurfacePatch

__all__ = ["CoEvolution"]


def _diagnosis(item: EpisodeDiagnosis | Mapping[str, Any]) -> EpisodeDiagnosis:
    return item if isinstance(item, EpisodeDiagnosis) else EpisodeDiagnosis.from_info(item)


class CoEvolution:
    """``evolver``: an :class:`Evolver` or the keyword arguments of one (its window, thresholds,
    patience); ``evolve_surface=False`` keeps counting without changing the surface;
    ``curriculum`` hands envs the evolver's task weights; ``surface``: the starting surface."""

    def __init__(self, evolver: Evolver | Mapping[str, Any] | None = None, *, evolve_surface: bool = True,
                 curriculum: bool = False, surface: Surface | None = None) -> None:
        self.evolver = evolver if isinstance(evolver, Evolver) else Evolver(**dict(evolver or {}))
        self.evolve_surface = evolve_surface
        self.curriculum = curriculum
        self.surface = surface or CANONICAL
        self.last_patches: list[SurfacePatch] = []
        self._task_weights: dict[int, tuple[Any, list[float]]] = {}  # id -> (task set, weights)

    @property
    def active(self) -> bool:
        return self.evolve_surface or self.curriculum

    @staticmethod
    def count(finished: Iterable[EpisodeDiagnosis | Mapping[str, Any]]) -> Counter:
        """The evolver's statistics of finished episodes (their diagnoses or last ``info`` dicts):
        what a process contributes to a batch."""
        return count_diagnoses(map(_diagnosis, finished))

    def step(self, counts: Sequence[Mapping[Count, int]]) -> list[SurfacePatch]:
        """Merge the counts of every process, close the batch, apply the patches; return them."""
        for c in counts:
            self.evolver.add_counts(c)
        patches = self.evolver.update()
        self.last_patches = patches
        if self.evolve_surface and patches:
            self.surface = self.surface.apply_all(patches)
        self._task_weights = {}  # recomputed for the next apply()
        return patches

    def evolve(self, finished: Iterable[EpisodeDiagnosis | Mapping[str, Any]]) -> list[SurfacePatch]:
        """One process's batch: :meth:`count` then :meth:`step`."""
        return self.step([self.count(finished)])

    def apply(self, envs: Any) -> None:
        """Give the current surface (and curriculum weights) to an env, a Gymnasium vector env or
        an iterable of envs; evaluation envs (frozen canonical surface) are left as they are."""
        if isinstance(envs, gym.vector.VectorEnv):  # its copies may live in other processes
            frozen = envs.get_attr("evaluation")
            if all(frozen):
                return
            if any(frozen):
                raise ValueError("a vector env mixes training and evaluation copies; give each its own CoEvolution.apply")
            if self.evolve_surface or self.surface.preset:
                envs.set_attr("surface", [self.surface_for(j) for j in range(envs.num_envs)])
            if self.curriculum and self.evolver.updates:
                envs.call("set_task_weights", self._weights_for(envs.get_attr("task_set")[0]))
            return
        for j, env in enumerate([envs] if isinstance(envs, gym.Env) else envs):
            base = env.unwrapped
            if base.surface.frozen:
                continue
            surface = self.surface_for(j)
            if (self.evolve_surface or self.surface.preset) and base.surface != surface:
                base.set_surface(surface)
            if self.curriculum and self.evolver.updates:
                base.set_task_weights(self._weights_for(base.task_set))

    def surface_for(self, position: int) -> Surface:
        """The surface of the env at ``position`` in a batch. The learnability curriculum needs
        both surfaces at the same policy, so every other env plays the canonical one: a GRPO
        group (consecutive rows, an even size) then has half its episodes each way."""
        if self.curriculum and self.evolver.curriculum_mode == "learnability" and position % 2 == 1:
            return CANONICAL
        return self.surface

    def _weights_for(self, task_set: Any) -> list[float]:
        key = id(task_set)  # the task set is kept with its weights, so its id cannot be reused meanwhile
        if key not in self._task_weights:
            self._task_weights[key] = (task_set, self.evolver.curriculum_weights(task_set))
        return self._task_weights[key][1]

    # -- checkpointing --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"evolver": self.evolver.state_dict(), "surface": self.surface.to_json()}

    def load_state_dict(self, state: Mapping[str, Any], source: str = "co-evolution state") -> None:
        self.evolver = Evolver.from_state_dict(state["evolver"], f"{source} field 'coevolution/evolver'")
        self.surface = Surface.from_json(state["surface"], f"{source} field 'coevolution/surface'")
        self._task_weights = {}
