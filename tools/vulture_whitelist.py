# ruff: noqa
"""Names `vulture` (run by `make lint`, settings in pyproject.toml) reports as unused that are used.

Vulture reads this file as code that uses them; nothing imports or runs it.
"""

# Protobuf fields the load client sets: the generated message classes read them.
_.string_value
_.page_hashes
_.locale
_.timezone_offset
_.color_scheme
_.is_embedded

__getattr__  # calibration/__init__.py: a module's lazy attribute hook (PEP 562)
exc_type  # calibration/api.py: part of the __exit__ signature

# Record fields a reader or a JSON view uses by name, though no code here reads them.
frozen_at  # cycles.FrozenFigures
n_instances  # decisions: the per-reviewer test result
already_ok  # judge.runner's plan of a run
unseal_reason  # store.split.SplitRecord
do  # calibration.card's requests: the field pydantic tells them apart by (discriminator)
applied_at  # store.migrations.Applied: the record of a migration, as read
close_pool  # store.postgres: the test cluster closes a database's pool before dropping it
revise_why  # pages/judge_lab.py unpacks judge.revised_run_options whole
Goal  # planning: the goal's type
app  # calibration_app/server.py: the st.App that `streamlit run` finds by this name
undocumented  # tools/manual.py: run by tests/test_docs_coverage.py (the manual's functions are run by cog and tests)

# SQLAlchemy and Alembic read these by name.
revision  # store/revisions/versions/*: Alembic's revision identifiers
down_revision
branch_labels
depends_on
downgrade  # store/revisions/versions/*: Alembic's step down
# store.tables: tables of the schema no converted statement names yet; the metadata (create_all,
# the schema tests, Alembic's target) holds them.
migrations_record
judge_calls
judge_lab_examples
judge_lab_revisions
cycle_plans
