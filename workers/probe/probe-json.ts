/** The parts of ffprobe's `-show_format -show_streams` JSON the probes read. */
export interface ProbeJson {
  format?: { duration?: string; tags?: Record<string, string> };
  streams?: ProbeStream[];
}

/** One stream of `ProbeJson`, as ffprobe prints it (rates are fractions like `30000/1001`, sample rates strings). */
export interface ProbeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  sample_rate?: string;
  channels?: number;
  disposition?: { attached_pic?: number };
  side_data_list?: { rotation?: number }[];
  tags?: { rotate?: string };
}
