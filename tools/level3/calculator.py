"""Calculator, level-3 copy: behaviourally identical to the level-1/2 tool.

Same description, parameters, algorithm, messages and check, so it is the same class registered in
the level-3 set as well.
"""

from ..level12.calculator import Calculator as _Calculator
from ..registry import LEVEL_3


@LEVEL_3.register
class Calculator(_Calculator):
    pass
