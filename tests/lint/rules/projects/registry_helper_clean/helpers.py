# The same helpers, evaluated under inference_mode and after eval() by their only caller: nothing to
# report in the helpers, although no class of theirs is known at the call.
class TaskHelper:
    def __init__(self, wrapper):
        self.wrapper = wrapper

    def eval_step(self, batch):
        return None


class ChoiceHelper(TaskHelper):
    def eval_step(self, batch):
        scores = self.wrapper.model(batch)
        return scores.argmax(-1).tolist()


HELPERS = {"choice": ChoiceHelper}
