done = function(summary, latency, requests) io.write(string.format("REQUESTS %d\n", summary.requests)) end
