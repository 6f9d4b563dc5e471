"""Shapes for the symbol index tests."""

MAX_SIDES = 12


class Polygon:
    """A polygon."""

    DEFAULT_NAME = "polygon"

    def __init__(self, sides):
        self.sides = sides

    def perimeter(self):
        return sum(self.sides)


def describe(shape):
    return f"{shape.perimeter()} units"


def main():
    square = Polygon([1, 1, 1, 1])
    print(describe(square))
    return square.perimeter()
