// Draws an allocsim report with D3 (v3, Debian's libjs-d3): allocsimDrawReport(data, root).
// A run's page: bytes over time, the memory map of each tenant (canvas), the OOMs, the
// peak by tag and layer. A sweep's page: peak bytes against the batch, one chart per facet.
// One script for two pages: the --report page draws the JSON in its #report-data when it
// loads (below); the browser page (web/page) draws what its module answers.
// A result field is read by its CSV name (a lane's run metrics and its study's columns, a
// run's device and capacity_bytes) and shown as its "brief", the command line's own formatter
// (docs/report.md); fmtBytes is for the axes and the blocks alone.
function allocsimDrawReport(data, root) {
  'use strict';
  var tooltip = d3.select('#tooltip');
  var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

  function fmtBytes(bytes) {
    var value = bytes, unit = 0;
    while (Math.abs(value) >= 1024 && unit < units.length - 1) { value /= 1024; ++unit; }
    return (unit === 0 ? String(value) : value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)) + ' ' + units[unit];
  }
  function fmtTime(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(ns >= 1e10 ? 1 : 2) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(ns >= 1e7 ? 1 : 2) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(ns >= 1e4 ? 1 : 2) + ' us';
    return ns + ' ns';
  }
  // Byte ticks at round binary values: 1, 2, 4 or 8 of a unit.
  function byteTicks(max, count) {
    if (!(max > 0)) return [0];
    var step = Math.pow(2, Math.ceil(Math.log(max / count) / Math.LN2));
    var ticks = [];
    for (var v = 0; v <= max; v += step) ticks.push(v);
    return ticks;
  }
  function showTip(event, text) {
    tooltip.style('display', 'block').style('left', (event.clientX + 14) + 'px').style('top', (event.clientY + 10) + 'px').text(text);
  }
  function hideTip() { tooltip.style('display', 'none'); }

  root.append('p').attr('class', 'command').text(data.command ? 'allocsim ' + data.command : '');
  root.append('p').attr('class', 'note').text('allocsim ' + data.version + '; self-contained: this page loads nothing from the network.');

  function fmtEvent(index) { return d3.format(',d')(index); }

  function lineChart(parent, id, width, height, xMax, yMax, xFormat) {
    var margin = {top: 10, right: 16, bottom: 34, left: 74};
    var svg = parent.append('svg').attr('id', id).attr('width', width).attr('height', height);
    var g = svg.append('g').attr('transform', 'translate(' + margin.left + ',' + margin.top + ')');
    var w = width - margin.left - margin.right, h = height - margin.top - margin.bottom;
    var x = d3.scale.linear().domain([0, xMax || 1]).range([0, w]);
    var y = d3.scale.linear().domain([0, yMax || 1]).range([h, 0]);
    g.append('g').attr('class', 'axis x').attr('transform', 'translate(0,' + h + ')')
        .call(d3.svg.axis().scale(x).orient('bottom').ticks(8).tickFormat(xFormat));
    g.append('g').attr('class', 'axis y').call(d3.svg.axis().scale(y).orient('left').tickValues(byteTicks(yMax, 6)).tickFormat(fmtBytes));
    return {svg: svg, g: g, x: x, y: y, w: w, h: h};
  }

  function legend(parent, entries) {
    var div = parent.append('div').attr('class', 'legend');
    entries.forEach(function (entry) {
      div.append('span').attr('class', 'swatch').style('background', entry.colour);
      div.append('span').attr('class', 'legend-label').text(entry.label);
    });
  }

  // ---- a run ---------------------------------------------------------------------------
  function runPage() {
    var lanes = data.lanes;
    var colour = d3.scale.category10().domain(lanes.map(function (l, i) { return i; }));
    var tagColour = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#393b79'];

    root.append('h2').text('Verdict');
    var table = root.append('table').attr('id', 'summary');
    var head = table.append('tr');
    // Each cell a field of the lane by its CSV name, as the command line's formatter writes it (brief).
    var fields = [['peak_allocated_bytes', 'peak allocated'], ['peak_reserved_bytes', 'peak reserved'],
                  ['live_lower_bound_bytes', 'live lower bound'], ['oom_count', 'OOMs']];
    ['', 'workload', 'policy'].concat(fields.map(function (f) { return f[1]; })).forEach(function (h) { head.append('th').text(h); });
    lanes.forEach(function (lane, i) {
      var row = table.append('tr').attr('class', 'lane');
      row.append('td').append('span').attr('class', 'swatch').style('display', 'inline-block').style('width', '12px').style('height', '12px').style('background', colour(i));
      row.append('td').attr('class', 'workload').text(lane.workload);
      row.append('td').attr('class', 'policy').text(lane.policy);
      fields.forEach(function (f) { row.append('td').attr('class', 'num').attr('data-field', f[0]).text(lane.brief[f[0]]); });
    });
    // A verdict begins with its tenant; in a comparison, the policy goes first.
    lanes.forEach(function (lane) { root.append('pre').attr('class', 'verdict').text((data.runs.length > 1 ? lane.label + ': ' : '') + lane.verdict_detail.text); });

    // Bytes over time, every tenant and policy on the same axes. Several runs of one program
    // (a comparison) share the trace's event index, since each policy's simulated clock
    // runs at its own allocator's cost: one x is one moment of the program.
    var x = xAxisOf(data.x_axis);
    root.append('h2').text(x.title);
    root.append('p').attr('class', 'note').text('Solid: allocated; dashed: reserved by the policy; dotted: used on the whole device; red dashes: the device capacity. Sampled on change, at most 2000 points per tenant, peaks kept. ' + x.note);
    var tMax = 0, drawnMax = 0, capacityMax = 0;
    data.runs.forEach(function (run) { capacityMax = Math.max(capacityMax, run.capacity_bytes); });
    lanes.forEach(function (lane) {
      tMax = Math.max(tMax, x.end(lane));
      lane.series.forEach(function (p) { tMax = Math.max(tMax, x.point(p)); drawnMax = Math.max(drawnMax, p[3]); });
    });
    // A device far larger than anything drawn (a replay with no limit that matters, 1 TiB) would
    // press every line onto the axis: the axis then ends at the bytes drawn, and the capacity is named.
    var bMax = capacityMax <= 4 * drawnMax ? capacityMax : drawnMax;
    bMax = Math.max(bMax, drawnMax);
    var chart = lineChart(root, 'chart-bytes', 1100, 380, tMax, bMax * 1.05, x.format);
    chart.svg.attr('data-x-axis', data.x_axis);
    chart.g.append('text').attr('class', 'x-label').attr('x', chart.w).attr('y', chart.h - 4).attr('text-anchor', 'end').style('font-size', '11px').text(x.label);
    var seenDevice = {};
    lanes.forEach(function (lane, i) {
      var points = lane.series;
      if (points.length === 0) return;
      var last = points[points.length - 1];
      if (x.point(last) < x.end(lane)) points = points.concat([[lane.end_time_ns, last[1], last[2], last[3], lane.events_replayed]]);
      var kinds = [['allocated', 1], ['reserved', 2]];
      if (!seenDevice[lane.run]) { kinds.push(['device', 3]); seenDevice[lane.run] = true; }
      kinds.forEach(function (kind) {
        var line = d3.svg.line().interpolate('step-after').x(function (p) { return chart.x(x.point(p)); }).y(function (p) { return chart.y(p[kind[1]]); });
        chart.g.append('path').attr('class', 'series ' + kind[0]).attr('data-lane', lane.label).attr('d', line(points)).style('stroke', colour(i));
      });
    });
    data.runs.forEach(function (run) {
      var capacity = run.capacity_bytes, named = run.device + ' ' + run.brief.capacity_bytes;
      if (capacity > bMax * 1.05) {
        chart.g.append('text').attr('class', 'capacity-above').attr('x', chart.w - 4).attr('y', 12).attr('text-anchor', 'end')
            .style('font-size', '11px').text(named + ': above this chart');
        return;
      }
      chart.g.append('line').attr('class', 'capacity-line').attr('x1', 0).attr('x2', chart.w).attr('y1', chart.y(capacity)).attr('y2', chart.y(capacity));
      chart.g.append('text').attr('x', chart.w - 4).attr('y', chart.y(capacity) - 4).attr('text-anchor', 'end').style('font-size', '11px').text(named);
    });
    lanes.forEach(function (lane) {
      lane.ooms.forEach(function (oom) { chart.g.append('line').attr('class', 'oom-line').attr('x1', chart.x(x.oom(oom))).attr('x2', chart.x(x.oom(oom))).attr('y1', 0).attr('y2', chart.h); });
    });
    legend(root, lanes.map(function (lane, i) { return {label: lane.label + ' (' + lane.workload + ')', colour: colour(i)}; }));

    root.append('h2').text('Memory map: address x ' + (data.x_axis === 'event' ? 'trace event' : 'time'));
    root.append('p').attr('class', 'note').text('Each rectangle is a block, from its allocation to its free, coloured by tag (a recording whose tags are all `other`: by its layer: the innermost Python frame of the program itself, or autograd backward); grey behind: the segments the policy took from the device (or the pages it mapped). Addresses are the ranges the tenant used, laid end to end. Red lines: OOMs. Hover for a block.');
    if (lanes.some(function (lane) { return lane.map.colour_by !== 'layer'; })) {
      legend(root, data.tags.map(function (tag, i) { return {label: tag, colour: tagColour[i]}; }));
    }
    lanes.forEach(function (lane, i) { memoryMap(lane, i, tMax, tagColour, x); });

    var withOoms = lanes.filter(function (lane) { return lane.ooms.length > 0; });
    if (withOoms.length > 0) {
      var section = root.append('section').attr('id', 'ooms');
      section.append('h2').text('Out of memory');
      withOoms.forEach(function (lane) { oomPanel(section, lane); });
    }

    var peaks = root.append('section').attr('id', 'peaks');
    peaks.append('h2').text('At the peak: what was alive');
    lanes.forEach(function (lane) {
      if (!lane.peak) return;
      peaks.append('h3').text(lane.label + ': ' + lane.brief.peak_allocated_bytes + ' allocated, just after event ' + lane.peak.event);
      bars(peaks, 'by tag', lane.peak.by_tag, function (name) { return tagColour[data.tags.indexOf(name)]; });
      if (lane.peak.layers.length > 0) bars(peaks, 'by layer (the largest)', lane.peak.layers, function () { return '#4c78a8'; });
    });
  }

  // What the x of a run's charts is: simulated time, or the trace's event index.
  function xAxisOf(kind) {
    if (kind === 'event') {
      return {title: 'Memory over the trace\'s events', label: 'trace event', format: fmtEvent,
              note: 'x: the index of the event in the trace, the same for every policy (each policy\'s simulated time differs with its allocator\'s costs).',
              point: function (p) { return p[4]; }, end: function (lane) { return lane.events_replayed; }, oom: function (oom) { return oom.event; },
              block: function (b, lane) { return [b[5], b[6] === null ? lane.events_replayed : b[6]]; },
              segment: function (s) { return [s[4], s[5]]; }};
    }
    return {title: 'Memory over simulated time', label: 'simulated time', format: fmtTime, note: '',
            point: function (p) { return p[0]; }, end: function (lane) { return lane.end_time_ns; }, oom: function (oom) { return oom.time_ns; },
            block: function (b) { return [b[7], b[8]]; }, segment: function (s) { return [s[2], s[3]]; }};
  }

  var layerColour = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#bcbd22', '#17becf', '#393b79', '#e7969c'];
  var otherLayers = '#b0b0b0';

  function memoryMap(lane, index, tMax, tagColour, xAxis) {
    var map = lane.map;
    var section = root.append('section').attr('class', 'map-section');
    section.append('h3').text(lane.label + ' (' + lane.workload + ')');
    var byLayer = map.colour_by === 'layer';
    function blockColour(b) {
      if (!byLayer) return tagColour[b[3]];
      var k = map.palette.indexOf(b[4]);
      return k >= 0 ? layerColour[k] : otherLayers;
    }
    if (byLayer) {
      var entries = map.palette.map(function (layer, k) { return {label: map.layers[layer], colour: layerColour[k]}; });
      if (map.layers.length > map.palette.length) entries.push({label: 'every other layer, or none of the program', colour: otherLayers});
      legend(section, entries);
    }
    var capped = map.shown_blocks < map.total_blocks;
    section.append('p').attr('class', 'note map-cap').text(map.total_blocks + ' blocks, ' +
        (capped ? 'the ' + map.shown_blocks + ' largest in bytes x lifetime drawn (at most ' + data.map_cap + ' per tenant; the rest are left out)' : 'all drawn') +
        '; ' + fmtBytes(map.extent) + ' of addresses, ' + map.segments.length + ' segments.');
    var width = 1100, height = 300, margin = {top: 6, right: 16, bottom: 30, left: 74};
    var w = width - margin.left - margin.right, h = height - margin.top - margin.bottom;
    var frame = section.append('div').attr('class', 'map-frame').style('width', width + 'px').style('height', height + 'px');
    var svg = frame.append('svg').attr('width', width).attr('height', height);
    var g = svg.append('g').attr('transform', 'translate(' + margin.left + ',' + margin.top + ')');
    var x = d3.scale.linear().domain([0, tMax || 1]).range([0, w]);
    var y = d3.scale.linear().domain([0, map.extent || 1]).range([h, 0]);
    g.append('g').attr('class', 'axis x').attr('transform', 'translate(0,' + h + ')').call(d3.svg.axis().scale(x).orient('bottom').ticks(8).tickFormat(xAxis.format));
    g.append('g').attr('class', 'axis y').call(d3.svg.axis().scale(y).orient('left').tickValues(byteTicks(map.extent, 5)).tickFormat(fmtBytes));
    var ratio = window.devicePixelRatio || 1;
    var canvas = frame.append('canvas').attr('class', 'memory-map').attr('data-lane', lane.label)
        .attr('width', w * ratio).attr('height', h * ratio).style('left', margin.left + 'px').style('top', margin.top + 'px')
        .style('width', w + 'px').style('height', h + 'px');
    var ctx = canvas.node().getContext('2d');
    ctx.scale(ratio, ratio);
    function rect(y0, bytes, t0, t1) {
      var top = y(y0 + bytes), px = x(t0);
      return [px, top, Math.max(1, x(t1) - px), Math.max(1, y(y0) - top)];
    }
    ctx.fillStyle = '#e8e8e8';
    map.segments.forEach(function (s) { var t = xAxis.segment(s), r = rect(s[0], s[1], t[0], t[1]); ctx.fillRect(r[0], r[1], r[2], r[3]); });
    var rects = map.blocks.map(function (b) { var t = xAxis.block(b, lane); return rect(b[0], b[1], t[0], t[1]); });
    map.blocks.forEach(function (b, i) { ctx.fillStyle = blockColour(b); ctx.fillRect(rects[i][0], rects[i][1], rects[i][2], rects[i][3]); });
    ctx.fillStyle = '#c00';
    lane.ooms.forEach(function (oom) { ctx.fillRect(x(xAxis.oom(oom)), 0, 1, h); });
    canvas.on('mousemove', function () {
      var event = d3.event, box = this.getBoundingClientRect();
      var px = event.clientX - box.left, py = event.clientY - box.top;
      for (var i = rects.length - 1; i >= 0; --i) {
        var r = rects[i];
        if (px >= r[0] && px <= r[0] + r[2] && py >= r[1] && py <= r[1] + r[3]) {
          var b = map.blocks[i];
          showTip(event, (byLayer ? 'frame: ' : 'layer: ') + (b[4] >= 0 ? map.layers[b[4]] : '-') + '\ntag: ' + data.tags[b[3]] +
              '\nrequested: ' + fmtBytes(b[2]) + '\nblock: ' + fmtBytes(b[1]) + '\nat offset ' + fmtBytes(b[0]) +
              '\nallocated at event ' + b[5] + ' (' + fmtTime(b[7]) + ')' +
              '\nfreed ' + (b[6] === null ? 'at the end' : 'at event ' + b[6]) + ' (' + fmtTime(b[8]) + ')');
          return;
        }
      }
      hideTip();
    }).on('mouseleave', hideTip);
  }

  function oomPanel(section, lane) {
    section.append('h3').text(lane.label + ': ' + lane.oom_count + ' OOM' + (lane.oom_count === 1 ? '' : 's'));
    section.append('pre').attr('class', 'verdict').text(lane.verdict_detail.text);
    lane.ooms.forEach(function (oom) {
      var panel = section.append('div').attr('class', 'oom');
      panel.append('pre').attr('class', 'oom-text').text(oom.text);
      panel.append('p').text('What held the rest: ' + (oom.holders || 'nobody it could name'));
      var free = oom.free;
      if (free === null) {
        panel.append('p').attr('class', 'free-as-at').text('Free blocks then: as at the OOM at event ' + oom.free_as_at + ' above.');
      } else {
        panel.append('p').text('Free blocks then, inside the ' + fmtBytes(free.segments_bytes) +
            (free.mapped ? ' this policy had mapped (the unmapped rest of its reserved address range is not free memory: a request needs pages mapped first)' : ' of segments this policy held') + ': ' +
            free.count + ', ' + fmtBytes(free.bytes) + ' in all' + (free.complete ? '' : ' (the block log was capped: incomplete)') +
            (free.segments_bytes === 0 ? ' (no segments or mapped pages were held)' : ''));
      }
      if (free !== null && free.largest.length > 0) {
        var table = panel.append('table').attr('class', 'free-blocks');
        var head = table.append('tr');
        head.append('th').text('free block'); head.append('th').text('at offset');
        free.largest.forEach(function (hole) {
          var row = table.append('tr');
          row.append('td').attr('class', 'num').text(fmtBytes(hole[1]));
          row.append('td').attr('class', 'num').text(fmtBytes(hole[0]));
        });
      }
      if (oom.state) panel.append('pre').attr('class', 'policy-state').text(oom.state);
    });
  }

  function bars(parent, title, entries, fill) {
    var barHeight = 16, width = 700, left = 220;
    var max = d3.max(entries, function (e) { return e[1]; }) || 1;
    var svg = parent.append('svg').attr('class', 'breakdown').attr('width', width).attr('height', entries.length * (barHeight + 3) + 22);
    svg.append('text').attr('x', 0).attr('y', 12).style('font-weight', 'bold').style('font-size', '12px').text(title);
    var x = d3.scale.linear().domain([0, max]).range([0, width - left - 90]);
    var row = svg.selectAll('g.bar').data(entries).enter().append('g').attr('class', 'bar')
        .attr('transform', function (e, i) { return 'translate(0,' + (20 + i * (barHeight + 3)) + ')'; });
    row.append('text').attr('x', left - 6).attr('y', barHeight - 4).attr('text-anchor', 'end').style('font-size', '12px').text(function (e) { return e[0]; });
    row.append('rect').attr('x', left).attr('width', function (e) { return Math.max(1, x(e[1])); }).attr('height', barHeight).style('fill', function (e) { return fill(e[0]); });
    row.append('text').attr('x', function (e) { return left + x(e[1]) + 4; }).attr('y', barHeight - 4).style('font-size', '12px').text(function (e) { return fmtBytes(e[1]); });
  }

  // ---- a sweep -------------------------------------------------------------------------
  function batchPage() {
    var policies = [];
    data.facets.forEach(function (f) { f.curves.forEach(function (c) { if (policies.indexOf(c.policy) < 0) policies.push(c.policy); }); });
    var colour = (policies.length <= 10 ? d3.scale.category10() : d3.scale.category20()).domain(policies);
    root.append('h2').text('Peak memory against ' + data.x_axis);
    root.append('p').attr('class', 'note').text('Per policy: dashed, peak reserved; solid, peak allocated; a filled dot fits, a hollow one ran out of memory. Red dashes: the device capacity. The vertical mark is the policy\'s largest ' + data.x_axis + ' that fits.');
    legend(root, policies.map(function (p) { return {label: p, colour: colour(p)}; }));
    var grid = root.append('div').attr('class', 'facets');
    var single = data.facets.length === 1;
    data.facets.forEach(function (facet) {
      var cell = grid.append('div').attr('class', 'facet');
      cell.append('h3').attr('class', 'facet-name').text(facet.name || 'every point');
      var xMin = Infinity, xMax = 0, yMax = facet.capacity_bytes;
      facet.curves.forEach(function (c) { c.points.forEach(function (p) { xMin = Math.min(xMin, p[0]); xMax = Math.max(xMax, p[0]); yMax = Math.max(yMax, p[2], p[1]); }); });
      if (!isFinite(xMin)) { xMin = 1; xMax = 2; }
      var width = single ? 1000 : 520, height = single ? 460 : 300;
      var margin = {top: 10, right: 16, bottom: 34, left: 74};
      var w = width - margin.left - margin.right, h = height - margin.top - margin.bottom;
      var svg = cell.append('svg').attr('class', 'batch-chart').attr('width', width).attr('height', height);
      var g = svg.append('g').attr('transform', 'translate(' + margin.left + ',' + margin.top + ')');
      var logScale = xMin > 0 && xMax / xMin >= 16;
      var x = (logScale ? d3.scale.log().base(2) : d3.scale.linear()).domain([xMin, Math.max(xMax, xMin + 1)]).range([0, w]);
      var y = d3.scale.linear().domain([0, yMax * 1.05]).range([h, 0]);
      var xAxis = d3.svg.axis().scale(x).orient('bottom');
      if (logScale) {
        var ticks = [];
        for (var t = Math.pow(2, Math.ceil(Math.log(xMin) / Math.LN2)); t <= xMax; t *= 2) ticks.push(t);
        xAxis.tickValues(ticks).tickFormat(d3.format('d'));
      }
      g.append('g').attr('class', 'axis x').attr('transform', 'translate(0,' + h + ')').call(xAxis);
      g.append('g').attr('class', 'axis y').call(d3.svg.axis().scale(y).orient('left').tickValues(byteTicks(yMax * 1.05, 6)).tickFormat(fmtBytes));
      g.append('text').attr('x', w).attr('y', h - 4).attr('text-anchor', 'end').style('font-size', '11px').text(data.x_axis);
      g.append('line').attr('class', 'capacity-line').attr('x1', 0).attr('x2', w).attr('y1', y(facet.capacity_bytes)).attr('y2', y(facet.capacity_bytes));
      g.append('text').attr('x', 4).attr('y', y(facet.capacity_bytes) - 4).style('font-size', '11px').style('fill', '#c00').text('device ' + facet.brief.capacity_bytes);
      facet.curves.forEach(function (curve) {
        var c = colour(curve.policy);
        [[2, 'reserved'], [1, 'allocated']].forEach(function (kind) {
          var line = d3.svg.line().x(function (p) { return x(p[0]); }).y(function (p) { return y(p[kind[0]]); });
          g.append('path').attr('class', 'series ' + kind[1]).attr('data-policy', curve.policy).attr('d', line(curve.points)).style('stroke', c);
        });
        g.append('g').selectAll('circle').data(curve.points).enter().append('circle').attr('class', 'probe')
            .attr('cx', function (p) { return x(p[0]); }).attr('cy', function (p) { return y(p[2]); }).attr('r', 3)
            .style('stroke', c).style('fill', function (p) { return p[3] ? c : '#fff'; })
            .on('mousemove', function (p) { showTip(d3.event, curve.policy + '\n' + data.x_axis + ' ' + p[0] + (p[3] ? ': fits' : ': out of memory') + '\npeak reserved ' + fmtBytes(p[2]) + '\npeak allocated ' + fmtBytes(p[1])); })
            .on('mouseleave', hideTip);
        if (curve.largest !== null) {
          g.append('line').attr('class', 'largest-mark').attr('data-policy', curve.policy).attr('x1', x(curve.largest)).attr('x2', x(curve.largest))
              .attr('y1', h).attr('y2', h - 14).style('stroke', c);
          g.append('text').attr('class', 'largest-label').attr('x', x(curve.largest)).attr('y', h - 16).attr('text-anchor', 'middle')
              .style('font-size', '10px').style('fill', c).text(curve.largest);
        }
      });
    });
  }

  if (data.kind === 'run') runPage(); else batchPage();
}

if (document.getElementById('report-data')) {
  allocsimDrawReport(JSON.parse(document.getElementById('report-data').textContent), d3.select('#report'));
  if (window.allocsimErrors.length === 0) document.body.setAttribute('data-status', 'ok');
}
