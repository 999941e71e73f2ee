//! `[stack]`: the CUDA, torch and cuDNN versions the image is said to carry.

use toml::de::DeValue;

use super::{Checker, STACK_KEYS, Value, integer_value};
use crate::profile::model::Stack;

impl Checker<'_> {
    pub(super) fn stack(&mut self, value: &Value<'_>, stack: &mut Stack) {
        let Some(table) = value.get_ref().as_table() else {
            self.type_error("stack", value, "a table", "[stack] cuda = \"12.8\"");
            return;
        };
        for (key, item) in table {
            match key.get_ref().as_ref() {
                "cuda" => {
                    if let Some(text) = self.string("stack.cuda", item) {
                        match text.parse() {
                            Ok(version) => stack.cuda = Some(version),
                            Err(message) => {
                                self.error(item.span(), format!("`stack.cuda`: {message}"), None)
                            }
                        }
                    }
                }
                "torch" => {
                    if let Some(text) = self.string("stack.torch", item) {
                        match text.parse() {
                            Ok(version) => stack.torch = Some(version),
                            Err(message) => {
                                self.error(item.span(), format!("`stack.torch`: {message}"), None)
                            }
                        }
                    }
                }
                "cudnn" => {
                    let major = match item.get_ref() {
                        DeValue::String(text) => text.parse::<u32>().ok(),
                        DeValue::Integer(integer) => {
                            integer_value(integer).and_then(|major| u32::try_from(major).ok())
                        }
                        _ => None,
                    };
                    match major {
                        Some(major) if (1..=99).contains(&major) => stack.cudnn = Some(major),
                        _ => self.error(
                            item.span(),
                            "`stack.cudnn` must be the cuDNN major version, like \"9\"".into(),
                            None,
                        ),
                    }
                }
                _ => self.unknown_key(key, &STACK_KEYS, Some("stack")),
            }
        }
    }
}
