import torch
from agent import Agent


def main():
    agent = Agent(torch.nn.Linear(4, 2))
    states = []
    for _ in range(10):
        state = torch.randn(4)
        print(agent.act(state))
        states.append(state)
        agent.learn(torch.stack(states))


if __name__ == "__main__":
    main()
