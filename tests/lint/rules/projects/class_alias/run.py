import sys

from exp_main import Exp_Main

Exp = Exp_Main
if sys.argv[1:] == ["train"]:
    for ii in range(2):
        exp = Exp(None)
        exp.train("s")
        exp.test("s")
else:
    exp = Exp(None)
    exp.test("s")
