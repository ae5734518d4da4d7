use sea_orm_migration::prelude::*;

/// `signing_keys.algorithm`: `EdDSA` (every application's keys so far) or
/// `RS256`, an RSA key an application gets once one of its OAuth clients
/// asks for RS256 ID tokens. Each algorithm has its own current key, and a
/// rotation rotates every algorithm the application has: the unique index
/// of current keys becomes one per application and algorithm.
///
/// Each direction is one batch of statements, so that they run on one
/// connection: SQLite's pool connections each cache the schema, and another
/// could still see the dropped index or miss the new column.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = format!(
            "ALTER TABLE signing_keys ADD COLUMN algorithm varchar NOT NULL DEFAULT 'EdDSA'; {}",
            current_keys_unique_by("application_id, algorithm")
        );
        manager.get_connection().execute_unprepared(&statements).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = format!(
            "DELETE FROM signing_keys WHERE algorithm <> 'EdDSA'; {} ALTER TABLE signing_keys DROP COLUMN algorithm",
            current_keys_unique_by("application_id")
        );
        manager.get_connection().execute_unprepared(&statements).await?;
        Ok(())
    }
}

/// At most one current key per `columns`.
fn current_keys_unique_by(columns: &str) -> String {
    format!(
        "DROP INDEX signing_keys_current; \
         CREATE UNIQUE INDEX signing_keys_current ON signing_keys ({columns}) WHERE retired_at IS NULL;"
    )
}
