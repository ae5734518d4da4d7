use sea_orm_migration::prelude::*;

/// The keys that seal the personal data in audit rows, one per data subject
/// (a user, or an email that is not a user's yet), each sealed under the
/// master key. Erasing a user deletes theirs: the audit rows keep their
/// hashes and lose what they said about the person (crypto-shredding).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PersonalKeys::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(PersonalKeys::SubjectId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(PersonalKeys::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(PersonalKeys::KeySealed).binary().not_null())
                    .col(ColumnDef::new(PersonalKeys::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("personal_keys_by_application")
                    .table(PersonalKeys::Table)
                    .col(PersonalKeys::ApplicationId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(PersonalKeys::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum PersonalKeys {
    Table,
    SubjectId,
    ApplicationId,
    KeySealed,
    CreatedAt,
}
