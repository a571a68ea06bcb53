class Staged:
    """A search in stages; how many calls each stage gets is a method of the base class."""

    def _policy(self, variants, share):
        return max(3, int(variants * share * 10))

    def _stage(self, name, variants, calls):
        print(name, variants, calls)
