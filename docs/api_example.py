# ruff: noqa: F821 -- `answers` and `labels` are the pipeline's lists of dicts (see calibration/api.py)
import calibration

with calibration.connect("calibration.db") as cal:
    cal.import_answers(answers, judge_model="gpt-4.1", judge_prompt_version="v1")
    cal.import_labels(labels)
    print("agreement:", cal.stats()["assessment"]["agreement"]["value"])
