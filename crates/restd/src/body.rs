//! An answer's body sent as the pieces it was written in
//! ([`crate::api::Resp::body`]): hyper writes them with vectored writes,
//! so a job listing's kept texts go to the socket without being copied
//! into one buffer first. Its exact size gives the `Content-Length`.

use hyper::body::{Bytes, Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A body of known pieces.
pub struct Pieces {
    parts: VecDeque<Bytes>,
    left: u64,
}

impl From<Vec<Bytes>> for Pieces {
    fn from(parts: Vec<Bytes>) -> Pieces {
        let parts: VecDeque<Bytes> = parts.into_iter().filter(|b| !b.is_empty()).collect();
        let left = parts.iter().map(|b| b.len() as u64).sum();
        Pieces { parts, left }
    }
}

impl From<String> for Pieces {
    fn from(text: String) -> Pieces {
        Pieces::from(vec![Bytes::from(text)])
    }
}

impl hyper::body::Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.parts.pop_front().map(|b| {
            this.left -= b.len() as u64;
            Ok(Frame::data(b))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use hyper::body::Body as _;

    #[tokio::test]
    async fn the_pieces_arrive_whole_and_in_order() {
        let body = Pieces::from(vec![
            Bytes::from_static(b"{\n"),
            Bytes::new(),
            Bytes::from("  \"a\": 1".to_string()),
            Bytes::from_static(b"\n}"),
        ]);
        assert_eq!(body.size_hint().exact(), Some(12));
        let all = body.collect().await.unwrap().to_bytes();
        assert_eq!(&all[..], b"{\n  \"a\": 1\n}");
    }
}
