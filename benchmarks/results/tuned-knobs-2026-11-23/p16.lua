init = function(args)
  local r = {}
  for i = 1, 16 do r[i] = wrk.format(nil, nil) end
  req = table.concat(r)
end
request = function() return req end
done = function(summary, latency, requests) io.write(string.format("REQUESTS %d\n", summary.requests)) end
