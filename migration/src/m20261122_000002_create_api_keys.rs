use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .col(ColumnDef::new(ApiKeys::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ApiKeys::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ApiKeys::Name).string().not_null())
                    .col(ColumnDef::new(ApiKeys::Prefix).string().not_null())
                    .col(ColumnDef::new(ApiKeys::SecretHash).binary().not_null().unique_key())
                    .col(ColumnDef::new(ApiKeys::Scopes).json().not_null())
                    .col(ColumnDef::new(ApiKeys::ExpiresAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(ApiKeys::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(ApiKeys::LastUsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(ApiKeys::RevokedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("api_keys_application_id_created_at")
                    .table(ApiKeys::Table)
                    .col(ApiKeys::ApplicationId)
                    .col(ApiKeys::CreatedAt)
                    .to_owned(),
            )
            .await?;
        // Names are unique among an application's unrevoked keys (as GitHub
        // does for tokens). A partial index: sea-query cannot express it, and
        // both PostgreSQL and SQLite accept this statement as written.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX api_keys_active_name ON api_keys (application_id, name) \
                 WHERE revoked_at IS NULL",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ApiKeys::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    ApplicationId,
    Name,
    Prefix,
    SecretHash,
    Scopes,
    ExpiresAt,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}
