"""nbgrader's configuration for grading the course's exercises (docs/teaching.md, "Exercises and grading").

Run nbgrader from this folder (the make targets do): `make release`, `make collect`, `make autograde`,
`make feedback` (tools/grading.py). The course folder nbgrader works in is build/grading (git-ignored):
source/NN_topic/NN_topic.ipynb (staged from exercises/ by `make release`), release/ (the student edition),
submitted/<student>/NN_topic/, autograded/, feedback/, gradebook.db and grades.csv.
"""

from pathlib import Path

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)

c.CourseDirectory.root = str(Path(__file__).resolve().parent / "build" / "grading")
c.CourseDirectory.course_id = "transformers-from-scratch"

# The student edition: each solution region becomes this stub, in place (nbgrader's ClearSolutions).
c.ClearSolutions.code_stub = {
    "python": 'raise NotImplementedError("Write your solution here, in place of this line; then run the check below.")'
}
c.ClearSolutions.text_stub = "Write your answer here."

# Autograding runs each submission top to bottom in a fresh kernel (the notebooks name the course's kernel,
# which pins the numeric path), with the set-up and check cells restored from the source. Set-up cells load
# models; the slowest exercise notebook runs in under a minute.
c.Execute.timeout = 600

# `make collect` (nbgrader zip_collect): the students' files, or .zip archives of them, named
# <student id>_NN_topic.ipynb or <student id>/NN_topic.ipynb, e.g. as a learning platform exports them.
c.ZipCollectApp.collector_plugin = "nbgrader.plugins.zipcollect.FileNameCollectorPlugin"
c.FileNameCollectorPlugin.named_regexp = r".*/(?P<student_id>[^/]+?)[/_](?P<file_id>\d\d_[a-z0-9_]+\.ipynb)$"
