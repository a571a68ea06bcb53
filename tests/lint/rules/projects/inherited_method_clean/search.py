from base import Staged


class Search(Staged):
    def stages(self):
        probe = ["a", "b", "c"]
        self._stage("probe", probe, self._policy(len(probe), 0.15))  # inherited methods: not a model
        self._stage("final", probe[:1], self._policy(1, 0.7))
