def good_before(x):
    return x + 1


def broken(:
    return


def good_after(y):
    return good_before(y)
