/**
 * The benches' plain server-sent-events reader: each complete frame of a
 * `GET /api/events` response, as its event name, its data line parsed as
 * JSON (undefined when it has none) and the moment its bytes arrived
 * (`performance.timeOrigin + performance.now()`, the clock the kill and
 * append stamps use).
 */
export function onFrames(res, onFrame) {
  let buf = '';
  res.setEncoding('utf8');
  res.on('data', (d) => {
    const at = performance.timeOrigin + performance.now();
    buf += d;
    let j;
    while ((j = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, j);
      buf = buf.slice(j + 2);
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      onFrame(/^event: (\w+)/m.exec(frame)?.[1], data === undefined ? undefined : JSON.parse(data), at);
    }
  });
}
