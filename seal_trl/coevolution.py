"""The environment side of the training loop: one evolver and one surface shared by all of a trainer's envs.

After every generation batch, :meth:`CoEvolution.step` takes the evolver's pending counts of every
process (``gather_object`` of :meth:`CoEvolution.local_pending`), sums them (counts: the order of
ranks does not change the sum), closes the batch with ``Evolver.update`` and applies the patches
to the surface. Every rank runs the same deterministic update on the same sums, so every rank
ends with the same evolver state and surface. :meth:`apply` pushes the surface (and curriculum
task weights) onto envs before a rollout; a surface with a preset (``observation_lite``) is pushed
even when evolution is off, since it is the training surface itself.

State (evolver, surface) round-trips through JSON: :meth:`state_dict` / :meth:`load_state_dict`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from seal_envs.core.evolver import EpisodeDiagnosis, Evolver
from seal_envs.core.surface import CANONICAL, Surface, SurfacePatch

__all__ = ["CoEvolution"]


class CoEvolution:
    def __init__(self, evolver_kwargs: Mapping[str, Any] | None = None, *, evolve_surface: bool = True,
                 curriculum: bool = False, surface: Surface | None = None) -> None:
        self.evolver = Evolver(**dict(evolver_kwargs or {}))
        self.evolve_surface = evolve_surface
        self.curriculum = curriculum
        self.surface = surface or CANONICAL
        self.last_patches: list[SurfacePatch] = []
        self._task_weights: list[float] | None = None

    @property
    def active(self) -> bool:
        return self.evolve_surface or self.curriculum

    @staticmethod
    def local_pending(final_infos: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """The evolver counts of this process's finished episodes (to gather across processes)."""
        scratch = Evolver()
        scratch.observe(EpisodeDiagnosis.from_info(info) for info in final_infos)
        return dict(scratch.pending)

    def step(self, pendings: Sequence[Mapping[str, int]]) -> list[SurfacePatch]:
        """Merge the gathered pending counts (rank order), update, apply patches; return the patches."""
        for pending in pendings:
            self.evolver.pending.update(Counter(pending))
        patches = self.evolver.update()
        self.last_patches = patches
        if self.evolve_surface and patches:
            self.surface = self.surface.apply_all(patches)
        self._task_weights = None  # recomputed for the next apply()
        return patches

    def apply(self, envs: Iterable[Any]) -> None:
        """Give ``envs`` the current surface (and curriculum weights); frozen (evaluation) envs are skipped."""
        for env in envs:
            base = env.unwrapped
            if base.surface.frozen:
                continue
            if (self.evolve_surface or self.surface.preset) and base.surface != self.surface:
                base.set_surface(self.surface)
            if self.curriculum and self.evolver.updates:
                if self._task_weights is None:
                    self._task_weights = self.evolver.curriculum_weights(base.task_set)
                base.set_task_weights(self._task_weights)

    # -- checkpointing --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"evolver": self.evolver.state_dict(), "surface": self.surface.to_json()}

    def load_state_dict(self, state: Mapping[str, Any], source: str = "co-evolution state") -> None:
        self.evolver = Evolver.from_state_dict(state["evolver"], f"{source} field 'coevolution/evolver'")
        self.surface = Surface.from_json(state["surface"], f"{source} field 'coevolution/surface'")
        self._task_weights = None
