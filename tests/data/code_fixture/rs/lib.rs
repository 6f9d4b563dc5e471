pub const LIMIT: u32 = 10;

pub struct Counter {
    value: u32,
}

impl Counter {
    pub fn new() -> Self {
        Counter { value: 0 }
    }

    pub fn bump(&mut self) -> u32 {
        self.value = clamp(self.value + 1);
        self.value
    }
}

fn clamp(v: u32) -> u32 {
    if v > LIMIT { LIMIT } else { v }
}
