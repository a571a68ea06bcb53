from algo import PPO, Policy
from envs import make_envs, make_buffer
from runner import Runner

runner = Runner(PPO(Policy(4, 2), 1e-3), make_envs(8))
runner.run(100, make_buffer(10_000))
