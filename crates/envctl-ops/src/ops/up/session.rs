//! The daemon `envctl up` works on, connected here rather than by the command: a
//! [`Session`] is connected once for the whole run and asked for each step (plan, make,
//! clean up, the ports, `--check`), so the command holds it without seeing the engine; and
//! the dry run's plan with what it shows ([`dry_run_plan`]), connected as doctor connects.

use std::cell::RefCell;
use std::rc::Rc;

use super::{DryRun, Plan, RunState, UpOptions, UpReport, UpRequest};
use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;

/// One connection to the daemon `up` makes its container on, shared by every step (a
/// clone of the engine shares bollard's client).
pub struct Session {
    engine: Engine,
}

impl Session {
    /// Connects to the daemon the user chose (or `--hosts` chose), checked with a ping so
    /// an unreachable one is named at once (`Context::engine`).
    pub async fn open(context: &Context) -> Result<Session, Error> {
        Ok(Session {
            engine: context.engine().await?,
        })
    }

    /// [`super::plan`] against this daemon.
    pub async fn plan(&self, request: UpRequest, context: &Context) -> Result<Plan, Error> {
        super::plan(Ok(self.engine.clone()), request, context).await
    }

    /// [`super::same_profile_elsewhere`] on this daemon: the user's other containers of
    /// `profile`, under names other than `name`.
    pub async fn same_profile_elsewhere(
        &self,
        profile: &str,
        name: &str,
        context: &Context,
    ) -> Result<Vec<String>, Error> {
        super::same_profile_elsewhere(&self.engine, profile, name, context).await
    }

    /// [`super::up`] on this daemon: preflight, pull, create and start `plan`'s container.
    pub async fn up(
        &self,
        plan: &Plan,
        options: &UpOptions,
        context: &Context,
        state: &Rc<RefCell<RunState>>,
    ) -> Result<UpReport, Error> {
        super::up(&self.engine, plan, options, context, state).await
    }

    /// [`super::clean_up`] on this daemon: removes what an interrupted or failed run made.
    pub async fn clean_up(&self, state: &Rc<RefCell<RunState>>, context: &Context) {
        super::clean_up(&self.engine, state, context).await;
    }

    /// Where the container's published ports are on this machine
    /// (`ops::forward::ports_here`).
    pub async fn ports_here(
        &self,
        id: &str,
    ) -> Result<Vec<crate::facts::container::PublishedPort>, Error> {
        crate::ops::forward::ports_here(&self.engine, id).await
    }

    /// How this machine reaches the container's ports on a daemon of another host
    /// (`ops::forward::reach`).
    pub async fn reach(&self, id: &str) -> Result<Option<crate::ops::forward::Reach>, Error> {
        crate::ops::forward::reach(&self.engine, id).await
    }

    /// `up --check`: nvidia-check in the container `report` says was just started, handed
    /// to `render`. A container gone by then is said with where to look for why.
    pub async fn check_started<T>(
        &self,
        report: &UpReport,
        options: &crate::ops::nvidia_check::NvidiaCheckOptions,
        context: &Context,
        render: impl FnOnce(crate::ops::nvidia_check::Checked<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let container = self
            .engine
            .inspect_container(&report.id)
            .await?
            .ok_or_else(|| Error::TargetNotFound {
                target: report.container.clone(),
                hint: format!(
                    "the container disappeared right after it started; `envctl logs {}` may say why",
                    report.container
                ),
            })?;
        crate::ops::nvidia_check::check(&self.engine, &container, options, context, render).await
    }
}

/// `up --dry-run`: connects as doctor does ([`super::dry_run_connection`]: a daemon that
/// does not answer is a fact, not a failure), plans `request` and gives the plan with what
/// `up` would send ([`super::dry_run`]), refused where `up` would refuse.
pub async fn dry_run_plan(
    request: UpRequest,
    force: bool,
    context: &Context,
) -> Result<(Plan, DryRun), Error> {
    let (connected, engine) = super::dry_run_connection(context).await;
    let plan = super::plan(connected, request, context).await?;
    let shown = super::dry_run(engine.as_ref(), &plan, force, context).await?;
    Ok((plan, shown))
}
