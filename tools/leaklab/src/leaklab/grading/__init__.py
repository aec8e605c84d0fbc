"""The grading side of the harness, in one place: a grade (`grade`), its report for the
learner (`report`), the one result format every consumer reads (`result`, schema in
docs/grading/), the course's own grader (`course`), the learner's diff beside the
solution (`diff`), and the class board (`board`)."""
