# Task helpers picked from a registry at run time: `self.task_helper.eval_step(batch)` may run any
# class's eval_step; the linter takes the family of methods of that name as its callees.
class TaskHelper:
    def __init__(self, wrapper):
        self.wrapper = wrapper

    def eval_step(self, batch):
        return None


class ChoiceHelper(TaskHelper):
    def eval_step(self, batch):  # error: PIT201
        scores = self.wrapper.model(batch)
        return scores.argmax(-1).tolist()


HELPERS = {"choice": ChoiceHelper}
