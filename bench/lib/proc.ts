import { readFileSync } from 'node:fs';

/** Resident set now (VmRSS) and its peak (VmHWM) of a process, in MiB, from /proc/<pid>/status. */
export function memoryOf(pid: number): { rssMiB: number; peakRssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 };
}

/** Samples a process's VmRSS at a fixed interval; `stop()` returns the samples' max and the VmHWM. */
export function sampleRss(pid: number, everyMs = 100) {
  const samples: number[] = [];
  const timer = setInterval(() => {
    try {
      samples.push(memoryOf(pid).rssMiB);
    } catch {
      // the process ended between two samples
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const { peakRssMiB } = memoryOf(pid);
      return { samples: samples.length, maxSampledRssMiB: Math.max(0, ...samples), peakRssMiB };
    },
  };
}
