pub(crate) mod chunk;
mod fastembed;

pub use self::fastembed::*;
