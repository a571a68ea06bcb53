"""A stand-in for gymnasium (not installed here): CartPole-v1 with the classic dynamics."""

from __future__ import annotations

import math
import os
from types import SimpleNamespace
from typing import Any

import numpy as np


class CartPole:
    """Barto, Sutton & Anderson's cart-pole, as gymnasium's CartPole-v1 (Euler integration)."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02

    def __init__(self, render_mode: str | None = None) -> None:
        self.max_steps = int(os.environ.get("PITSTOP_CARTPOLE_MAX_STEPS", 500))
        self.spec = SimpleNamespace(id="CartPole-v1", reward_threshold=float(os.environ.get(
            "PITSTOP_CARTPOLE_THRESHOLD", 475.0)), max_episode_steps=self.max_steps)
        self.rng = np.random.default_rng()
        self.state = np.zeros(4)
        self.steps = 0

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total, pml = self.masspole + self.masscart, self.masspole * self.length
        temp = (force + pml * theta_dot**2 * math.sin(theta)) / total
        thetaacc = (self.gravity * math.sin(theta) - math.cos(theta) * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * math.cos(theta) ** 2 / total))
        xacc = temp - pml * thetaacc * math.cos(theta) / total
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        terminated = bool(abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360)
        return self.state.astype(np.float32), 1.0, terminated, self.steps >= self.max_steps, {}

    def render(self) -> None:
        return None


def make(env_id: str, render_mode: str | None = None, **kwargs: Any) -> CartPole:
    if env_id != "CartPole-v1":
        raise ValueError(f"this gymnasium stand-in has only CartPole-v1, not {env_id!r}")
    return CartPole(render_mode)
