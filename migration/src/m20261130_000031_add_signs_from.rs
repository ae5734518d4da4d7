use sea_orm_migration::prelude::*;

/// A signing key's first moment of signing: null for a key that signed from
/// its creation; later for a key published ahead by a scheduled rotation, so
/// that every verifier's cached JWKS holds it before a token needs it.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(SigningKeys::Table)
                    .add_column(ColumnDef::new(SigningKeys::SignsFrom).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(SigningKeys::Table).drop_column(SigningKeys::SignsFrom).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum SigningKeys {
    Table,
    SignsFrom,
}
