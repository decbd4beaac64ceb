"""The scalar field types every config model uses: strict sizes, counts and flags.

Sizes are strict positive integers: a YAML ``true`` is not 1 and ``768.0`` is not 768. The upper
bound keeps absurd values (a typo with extra digits) from passing as a model.
"""

from typing import Annotated

from pydantic import Field

MAX_SIZE = 2**31 - 1
Size = Annotated[int, Field(strict=True, ge=1, le=MAX_SIZE)]
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_SIZE)]
Flag = Annotated[bool, Field(strict=True)]
