"""Alembic environment: molt runs migrations itself (``molt.registry.database.migrate``) on the
connection it opened, so there is no alembic.ini and no URL here."""

from alembic import context

from molt.registry.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
