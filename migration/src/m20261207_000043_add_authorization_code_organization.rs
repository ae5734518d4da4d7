use sea_orm_migration::prelude::*;

/// `oauth_codes.organization_id`: the organization the user chose on the
/// hosted pages for a client granted the `organization` scope; the session
/// the code's exchange opens has it active.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let column = ColumnDef::new(OauthCodes::OrganizationId).uuid().null().to_owned();
        manager.alter_table(Table::alter().table(OauthCodes::Table).add_column(column).to_owned()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(OauthCodes::Table).drop_column(OauthCodes::OrganizationId).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum OauthCodes {
    Table,
    OrganizationId,
}
