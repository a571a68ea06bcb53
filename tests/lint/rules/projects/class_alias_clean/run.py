from exp_main import Exp_Main

Exp = Exp_Main
for ii in range(2):
    exp = Exp(None)
    exp.train("s")
    exp.test("s")
