from agent import Agent


def train(env, steps):
    agent = Agent()
    episode_reward = 0
    obs = env.reset()
    for step in range(steps):
        action = agent.select_action(obs)
        obs, reward, done, info = env.step(action)
        agent.update_policy(obs)
        episode_reward += reward
    return episode_reward
