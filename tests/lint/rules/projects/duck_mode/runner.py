import torch


class Runner:
    def __init__(self, trainer, envs):
        self.trainer = trainer  # handed in: its class is not known here
        self.envs = envs

    @torch.inference_mode()
    def evaluate(self, steps):  # warning: PIT109
        self.trainer.prep_rollout()  # only sets a flag (algo.py)
        obs = self.envs.reset()
        total = 0.0
        for _ in range(steps):
            action = self.trainer.policy.act(obs)
            obs, reward = self.envs.step(action)
            total += float(reward)
        return total

    def run(self, episodes, buffer):
        for _ in range(episodes):
            self.trainer.prep_training()
            self.trainer.update(*buffer.sample())
            self.evaluate(10)
