use sea_orm_migration::prelude::*;

/// An application setting: the feature keys whose resolved values an
/// access token with an active organization carries as its `ent` claim.
/// Null: none.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(ColumnDef::new(Applications::EntitlementClaims).json().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(Applications::Table).drop_column(Applications::EntitlementClaims).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    EntitlementClaims,
}
