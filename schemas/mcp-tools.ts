import Type, { type TSchema } from 'typebox';
import { MODEL_IDS } from './models-catalog.ts';
import {
  AssetSchema,
  ExportBody,
  ImportAssetBody,
  InstructBody,
  PatchProjectBody,
  ProjectParams,
  ProjectSchema,
  StateQuery,
  VideoBody,
  VideoSchema,
} from './editor.ts';
import { ImageGenerateBody, JobParams, VideoGenerateBody } from './jobs.ts';
import { defaulted, literalUnion } from './common.ts';

// Inputs and outputs of the MCP tools (docs/mcp.md). A tool that mirrors a REST call takes that call's body
// plus its path ids and answers that call's 200 body, so the REST schemas are reused here: the same
// validation messages (docs/errors.md, Validation) and the same answer shapes (OpenAPI).

/** A REST field schema without its `default`: where the default depends on something else in the input. */
const withoutDefault = <T extends TSchema>(schema: T): T => {
  const { default: _default, ...rest } = schema as T & { default?: unknown };
  return rest as T;
};

/** The three model ids, in the catalogue's order. */
export const MCP_MODEL_IDS = [MODEL_IDS.video, MODEL_IDS.videoFast, MODEL_IDS.image] as const;
const ModelId = (description: string) =>
  literalUnion(MCP_MODEL_IDS, {
    description,
    errorMessage: `model must be one of ${MCP_MODEL_IDS.join(', ')}`,
  });

const video = VideoGenerateBody.properties;
const image = ImageGenerateBody.properties;
const project = ProjectParams.properties;

/** Tools that take nothing. */
export const McpEmptyInput = Type.Object({});

/** `estimate_cost`: priced with the functions the jobs are charged with. */
export const McpEstimateCostInput = Type.Object({
  model: ModelId('The model to price'),
  duration_seconds: Type.Optional({
    ...withoutDefault(video.duration_seconds),
    description: 'Video models: 4, 5, 6, 8, 10 or 15 (default 5)',
  }),
  resolution: Type.Optional({
    ...withoutDefault(video.resolution),
    description: 'Video models: 480p or 720p (default 720p)',
  }),
  fast: Type.Optional({
    ...withoutDefault(video.fast),
    description: 'Video: true prices the fast variant (as model vidmodel-2.0-fast)',
  }),
  generate_audio: Type.Optional({
    ...withoutDefault(video.generate_audio),
    description: 'Video models (default true; audio costs nothing extra)',
  }),
  num_images: Type.Optional({
    ...withoutDefault(image.num_images),
    description: 'imgmodel-2: 1 to 4 (default 1)',
  }),
});

export const McpEstimateCostOutput = Type.Object({
  model: Type.String({ description: 'The model priced (vidmodel-2.0-fast when `fast` was asked)' }),
  credits: Type.Integer({ description: 'What a generation with these parameters is charged' }),
});

/**
 * `media_forge_generate`: the model, then the REST body of that model's route (docs/api.md, Routes). Defaults
 * depend on the model, so none is given here: each body is completed and checked by its own route's schema.
 */
export const McpGenerateInput = Type.Object({
  model: ModelId(
    'vidmodel-2.0 (video; text-to-video, or image-to-video with image_url), vidmodel-2.0-fast (cheaper text-to-video), imgmodel-2 (images; edit mode with image_urls)',
  ),
  prompt: video.prompt,
  image_url: Type.Optional({
    ...video.image_url,
    description: 'vidmodel-2.0 only: https URL (or a /media URL of this service) of a still: image-to-video',
  }),
  fast: Type.Optional({
    ...withoutDefault(video.fast),
    description: 'Video only: true selects the fast variant (same as model vidmodel-2.0-fast)',
  }),
  duration_seconds: Type.Optional({
    ...withoutDefault(video.duration_seconds),
    description: 'Video only: 4, 5, 6, 8, 10 or 15 seconds (default 5)',
  }),
  aspect_ratio: Type.Optional({
    ...withoutDefault(video.aspect_ratio),
    description:
      'Video: 16:9 (default), 9:16, 1:1, 4:3, 3:4, 21:9. Image: 1:1 (default), 16:9, 9:16, 4:3, 3:4',
  }),
  resolution: Type.Optional({
    ...withoutDefault(video.resolution),
    description: 'Video only: 480p or 720p (default 720p)',
  }),
  generate_audio: Type.Optional({
    ...withoutDefault(video.generate_audio),
    description: 'Video only: native sound effects and ambient audio (default true, no extra cost)',
  }),
  image_urls: Type.Optional({
    ...withoutDefault(image.image_urls),
    description: 'imgmodel-2 only: 1 to 9 reference image URLs (https or /media URLs): runs the edit mode',
  }),
  num_images: Type.Optional({
    ...withoutDefault(image.num_images),
    description: 'imgmodel-2 only: 1 to 4 images (default 1)',
  }),
  seed: Type.Optional({ ...video.seed, description: 'For reproducibility (random when omitted)' }),
});

/** `job_status`, `job_cancel`. */
export const McpJobIdInput = Type.Object({ job_id: JobParams.properties.job_id });

/** `job_wait`. */
export const McpJobWaitInput = Type.Object({
  job_id: JobParams.properties.job_id,
  timeout_seconds: defaulted(
    Type.Integer({
      minimum: 1,
      maximum: 600,
      default: 300,
      description: 'Longest wait in seconds (1 to 600, default 300); the job as it is then is returned',
      errorMessage: 'timeout_seconds must be an integer from 1 to 600',
    }),
  ),
});

/** `video_prompt_guide`. */
export const McpPromptGuideOutput = Type.Object({
  guide: Type.String({ description: 'Markdown: the recommended video prompt structure, with an example' }),
});

/** `video_editor_list_projects` (GET /projects). */
export const McpProjectListOutput = Type.Object({
  projects: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      aspect_ratio: Type.String(),
      updated_at: Type.String({ format: 'date-time' }),
    }),
  ),
});

/** `{ project }` (POST /projects, PATCH /projects/<id>). */
export const McpProjectOutput = Type.Object({ project: ProjectSchema });

/** `video_editor_get_state`: the path id plus the `video_id` query. */
export const McpStateInput = Type.Object({ project_id: project.project_id, ...StateQuery.properties });

/** `video_editor_instruct`: the path id plus the instruct body. */
export const McpInstructInput = Type.Object({ project_id: project.project_id, ...InstructBody.properties });

/** `video_editor_export`: the path id plus the export body. */
export const McpExportInput = Type.Object({ project_id: project.project_id, ...ExportBody.properties });

/** `video_editor_create_video`: the path id plus the POST /videos body. */
export const McpCreateVideoInput = Type.Object({ project_id: project.project_id, ...VideoBody.properties });
export const McpVideoOutput = Type.Object({ video: VideoSchema });

/** `video_editor_add_asset`: the path id plus the JSON import body of POST /assets. */
export const McpAddAssetInput = Type.Object({
  project_id: project.project_id,
  ...ImportAssetBody.properties,
});
export const McpAssetOutput = Type.Object({ asset: AssetSchema });

/** `video_editor_update_context`: the path id plus PATCH /projects' `context_md`, required here. */
export const McpUpdateContextInput = Type.Object({
  project_id: project.project_id,
  ...Type.Required(Type.Pick(PatchProjectBody, ['context_md'])).properties,
});
