"""The exercise checks: one module per lecture, `course.checks.lecture_NN`, one function per exercise.

An exercise notebook's locked set-up cell imports its lecture's module before any solution runs, and each check cell
is one call that hands the student's function in explicitly:

    # Check exercise 1
    from course.checks import lecture_03
    lecture_03.softmax(softmax)

What a check relies on is bound when its module is imported (see `course.checks.support`): the built-ins it calls,
torch's functions, its instruments from `course.exercises`. A solution cell that later rebinds `torch.allclose`,
`builtins.abs` or `course.exercises.forbid` changes nothing here. A check compares plain values of exact types
(`type(x) is torch.Tensor`, Python ints, floats and lists), never a returned object's own `==`, and every call of the
student's code runs under a time budget.

The references the checks compare with are in these modules; a determined student can read them, as nbgrader's own
documentation says of visible tests (docs/teaching.md, "Exercises and grading").
"""
