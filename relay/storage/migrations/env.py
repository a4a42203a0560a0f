"""Alembic environment: runs on the connection init_db hands over, or on the configured URL."""
from alembic import context
from sqlalchemy import create_engine

from relay.storage.models import Base

config = context.config
connection = config.attributes.get("connection")

if connection is None:
    connection = create_engine(config.get_main_option("sqlalchemy.url")).connect()

context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
