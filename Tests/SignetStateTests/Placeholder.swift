// SignetStateTests
