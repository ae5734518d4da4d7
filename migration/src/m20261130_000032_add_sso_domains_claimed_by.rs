use sea_orm_migration::prelude::*;

/// Who claimed an SSO domain: an auto-join grants its role only while that
/// user may still grant it. Null on domains claimed before (their claimer
/// is unknown: they auto-join only as what any admin may grant).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(SsoDomains::Table)
                    .add_column(ColumnDef::new(SsoDomains::ClaimedBy).uuid().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.alter_table(Table::alter().table(SsoDomains::Table).drop_column(SsoDomains::ClaimedBy).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum SsoDomains {
    Table,
    ClaimedBy,
}
