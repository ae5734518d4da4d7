use sea_orm_migration::prelude::*;

/// The catalog's processor-account claims: `POST /v1/billing/connect` records
/// one per application (a new claim replaces the earlier one). A claim is not
/// a link: `processor_accounts` holds only the links a signed processor event
/// has verified (its account's `metadata.gatehouse_application_id` named the
/// claiming application). Any number of applications may claim one account.
/// Links made before (by connect alone, so possibly squatted) become claims,
/// to be verified again by the processor's next event for the account.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProcessorAccountClaims::Table)
                    .col(ColumnDef::new(ProcessorAccountClaims::ApplicationId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ProcessorAccountClaims::ProcessorAccountId).string().not_null())
                    .col(ColumnDef::new(ProcessorAccountClaims::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("processor_account_claims_account")
                    .table(ProcessorAccountClaims::Table)
                    .col(ProcessorAccountClaims::ProcessorAccountId)
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        db.execute_unprepared(
            "INSERT INTO processor_account_claims (application_id, processor_account_id, created_at) \
             SELECT application_id, processor_account_id, created_at FROM processor_accounts",
        )
        .await?;
        db.execute_unprepared("DELETE FROM processor_accounts").await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ProcessorAccountClaims::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum ProcessorAccountClaims {
    Table,
    ApplicationId,
    ProcessorAccountId,
    CreatedAt,
}
