//! `envctl doctor --hosts a,b,c`: the facts that make the team's setups differ, side by
//! side (`ops::hosts::side_by_side`): engine and runtimes, the NVIDIA driver branch, CUDA
//! and GPU models where they can be known, and each profile's image and lock digest on
//! every host, with the differences marked (`≠`) and the compared facts unknown on a host
//! that answered marked `?` (never "agree"). Another machine's driver and GPUs are learnt
//! through its daemon (`ops::server_gpus`). Exit 1 when a compared fact differs between
//! hosts that answered; a host that cannot be reached is a column saying why.

use serde::Serialize;

use super::{Context, runtime};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::hosts::{Cell, ComparedFact};
use crate::ui::table::print_table;

#[derive(Serialize)]
struct HostState {
    host: String,
    endpoint: String,
    reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

pub fn run(profiles: &[String], names: &[String], context: &Context) -> Result<ExitStatus, Error> {
    let resolved = context.profiles_or_project(profiles)?;
    let (answers, compared) = runtime()?.block_on(crate::ops::hosts::compare(
        context,
        names,
        &resolved,
        super::REQUEST_TIMEOUT,
    ))?;
    let (states, columns) = host_states(answers);
    let facts = crate::ops::hosts::side_by_side(&columns, &compared);
    let differences = facts.iter().filter(|fact| fact.differs).count();
    // Facts unknown on a host that answered are not agreed on: they are marked and said.
    let incomplete = facts
        .iter()
        .filter(|fact| fact.incomplete && !fact.differs)
        .count();
    let status = if differences > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    };
    if context.json {
        #[derive(Serialize)]
        struct Report<'a> {
            hosts: &'a [HostState],
            facts: &'a [ComparedFact],
            differences: usize,
            unknown: usize,
        }
        context.printer.json(&Report {
            hosts: &states,
            facts: &facts,
            differences,
            unknown: incomplete,
        })?;
        return Ok(status);
    }
    let mut headers = vec!["", "FACT"];
    headers.extend(states.iter().map(|state| state.host.as_str()));
    print_table(&context.printer, &headers, &fact_rows(&facts))?;
    warn_unreachable(context, &states);
    say_agreement(context, differences, incomplete);
    Ok(status)
}

/// Each host's state for the report, and its facts or the reason it could not be asked
/// for the side-by-side comparison.
fn host_states(
    answers: Vec<crate::ops::hosts::Answer<crate::ops::hosts::HostFacts>>,
) -> (
    Vec<HostState>,
    Vec<Result<crate::ops::hosts::HostFacts, String>>,
) {
    let mut states = Vec::new();
    let mut columns = Vec::new();
    for answer in answers {
        let endpoint = answer.host.endpoint().to_string();
        match answer.result {
            Ok(facts) => {
                states.push(HostState {
                    host: answer.host.name.clone(),
                    endpoint,
                    reachable: true,
                    error: None,
                    hint: None,
                });
                columns.push(Ok(facts));
            }
            Err(error) => {
                states.push(HostState {
                    host: answer.host.name.clone(),
                    endpoint,
                    reachable: false,
                    error: Some(crate::error::error_chain(&error)),
                    hint: error.hint(),
                });
                columns.push(Err(error.to_string()));
            }
        }
    }
    (states, columns)
}

/// The table's rows: the mark (`≠` differs, `?` unknown somewhere), the fact, its cells.
fn fact_rows(facts: &[ComparedFact]) -> Vec<Vec<String>> {
    facts
        .iter()
        .map(|fact| {
            [
                if fact.differs {
                    "≠"
                } else if fact.incomplete {
                    "?"
                } else {
                    ""
                }
                .to_string(),
                fact.fact.clone(),
            ]
            .into_iter()
            .chain(fact.cells.iter().map(Cell::shown))
            .collect()
        })
        .collect()
}

/// A warning for every host that could not be asked, with why.
fn warn_unreachable(context: &Context, states: &[HostState]) {
    for state in states.iter().filter(|state| !state.reachable) {
        let hint = state
            .hint
            .as_ref()
            .map_or_else(String::new, |hint| format!(" (hint: {hint})"));
        context.printer.warn(&format!(
            "host `{}` could not be asked: {}{hint}",
            state.host,
            state.error.as_deref().unwrap_or("")
        ));
    }
}

/// The closing words: how many facts differ, how many are unknown, or that all agree.
fn say_agreement(context: &Context, differences: usize, incomplete: usize) {
    if differences > 0 {
        context.printer.warn(&format!(
            "the hosts differ in {differences} fact{} (marked ≠)",
            if differences == 1 { "" } else { "s" }
        ));
    }
    if incomplete > 0 {
        context.printer.warn(&format!(
            "{incomplete} compared fact{} unknown on a host that answered (marked ?): the hosts are not said to agree on {}",
            if incomplete == 1 { " is" } else { "s are" },
            if incomplete == 1 { "it" } else { "them" }
        ));
    } else if differences == 0 {
        context
            .printer
            .info("the hosts that answered agree on every compared fact");
    }
}
